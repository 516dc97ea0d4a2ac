package turn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/budget"
	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// A warm conversation. Between drop points a conversation's request is the
// same bytes up to its last answer from turn to turn, so a turn keeps what
// it composed for the next: the conversation open, the events of its
// window decoded, the model's messages made of them and their wire bytes;
// and the files a turn reads and writes beside the log open (its folder,
// whose flock the next turn takes again on the same descriptor, the id
// index, the copy for people, the told file), so a warm message opens and
// closes none.
// The next turn of the conversation in this process takes it back under
// the folder's lock and uses it only when nothing changed underneath: the
// conversation's last seq is the one the turn left, and its folder the
// same folder with the same times (another process's turn, a repair, a
// conversion, a folder removed and made again: composed afresh). The window is then found among
// the kept events by the same steps as among those read from the store,
// so a drop point or a summary moves it exactly as there; the messages and
// bytes are kept only while the window's start does not move, and only
// what came since is made and encoded. The system prompt, the settings and
// the tools are read as every turn reads them (from the prompt's cache,
// which stats its files): nothing of them is kept here.

// Default bounds of a Warm: a conversation kept holds up to five open files
// (its log, its folder, its id index, its copy for people, its told file),
// and about three times its window's bytes (see CHOICES.md).
//
// warmFiles is what a Warm's Pool counts for each conversation it keeps:
// those five, a compact conversation's frames, and the agent's home held
// while any of its conversations is kept, counted with each.
const (
	DefaultWarmConversations = 256
	DefaultWarmBytes         = 64 << 20
	DefaultWarmIdle          = time.Minute // a conversation whose turns come further apart gains little

	warmFiles = 7
)

// Warm keeps, for the conversations a process has in use, what their last
// turn composed, at most MaxConversations of them and MaxBytes of their
// events and wire bytes together: past either, the conversation used
// least lately is let go of; and one with no turn for Idle is let go of
// at the next turn of any. It is the process's, shared by its Runners,
// built in main; Release and Forget let go of what it keeps when the
// process or an agent goes idle. The zero value is ready to use. It is
// safe for concurrent use.
type Warm struct {
	MaxConversations int              // 0: DefaultWarmConversations
	MaxBytes         int              // 0: DefaultWarmBytes
	Idle             time.Duration    // 0: DefaultWarmIdle
	Now              func() time.Time // the clock; nil is time.Now
	// Pool, when not nil, counts the descriptors a conversation kept
	// holds (warmFiles each): one is kept only where the pool has room,
	// the conversations used least lately let go of to make it.
	Pool *budget.Pool

	mu sync.Mutex
	// guarded by mu
	kept  map[warmKey]*warmConv
	bytes int
	clock uint64 // counts puts, for the least lately used
}

type warmKey struct{ agent, thread string }

// warmConv is what a turn left of its conversation. A turn holds it alone
// while it runs, taken out of its Warm.
type warmConv struct {
	dir    string
	conv   store.Conversation // open, its lease and lock let go
	last   int64              // the conversation's last seq as the turn left it
	folder folderKey          // the folder as the turn left it

	startConn, cacheThread string // what open read of the first event

	dirFD   int                // the folder, open and unlocked, whose flock the next turn takes,
	dirOpen bool               // when this is set
	told    idempotency.Told   // the told file, open (see readTold)
	ids     *idempotency.Index // the id index, open, through last; nil when not kept
	copy    chatcopy.File      // the copy for people, open
	home    *home.Hold         // the agent's home, held while this is kept; nil: not held (see Runner.HoldHome)

	// log is the conversation's events from log[0].Seq through last, in
	// the log's order, as decoded from the store; size and toks are each
	// one's bytes there and tokens.
	log  []event.Event
	size []int
	toks []int

	msgs warmMessages

	used  uint64    // when it was put back, by its Warm's count of puts
	at    time.Time // and by its clock
	bytes int       // what it holds, about
}

// warmMessages is the model's messages made of a window, and their wire
// bytes: valid while the window starts with the event at first and holds
// the built events it was made of.
type warmMessages struct {
	b         prompt.Builder
	first     int64 // the seq of the window's first event given to b
	built     int   // how many of the window's events b was given
	builtLast int64 // the seq of the last of them
	form      string
	prefix    model.Prefix
	text      []model.Message // the messages through the last answer, calls as text, when a request offered no tools
}

// reset empties m for another window.
func (m *warmMessages) reset() {
	m.b = prompt.Builder{}
	m.first, m.built, m.builtLast, m.form = 0, 0, 0, ""
	m.prefix.Reset()
	clear(m.text)
	m.text = m.text[:0]
}

// asText is msgs, m's, with their calls and results written as text
// (prompt.CallsAsText), those through the last answer as written before.
// The slice shares m's memory up to the next call.
func (m *warmMessages) asText(msgs []model.Message) []model.Message {
	k := min(len(m.text), len(msgs))
	out := append(m.text[:k], prompt.CallsAsText(msgs[k:])...)
	m.text = out[:stable(out)]
	return out
}

// stable is how many of msgs no later event changes: those through the
// last answer.
func stable(msgs []model.Message) int {
	n := len(msgs)
	for n > 0 && msgs[n-1].Role != "assistant" {
		n--
	}
	return n
}

// messages is the model's messages of events, a window, made from what m
// made of the window before when events holds that window's events and
// more.
func (m *warmMessages) messages(events []event.Event) []model.Message {
	if m.built > 0 && (len(events) < m.built || events[0].Seq != m.first || events[m.built-1].Seq != m.builtLast) {
		m.reset()
	}
	if len(events) == 0 {
		m.reset()
		return m.b.Messages()
	}
	m.b.Add(events[m.built:])
	m.first, m.built, m.builtLast = events[0].Seq, len(events), events[len(events)-1].Seq
	return m.b.Messages()
}

// encode gives req the wire bytes of its messages through the last
// answer, in format, text saying calls are written as text: kept from the
// requests before, and only what came since encoded.
func (m *warmMessages) encode(req *model.Request, format string, text bool) {
	form := format
	if text {
		form += "+text"
	}
	if m.form != form {
		m.prefix.Reset()
		m.form = form
	}
	if err := m.prefix.Extend(format, req.Messages[:stable(req.Messages)]); err != nil {
		m.prefix.Reset()
		m.form = ""
		req.Prefix = nil
		return // a format the model package does not keep: encoded afresh
	}
	req.Prefix = &m.prefix
}

func (w *Warm) maxConversations() int {
	if w.MaxConversations > 0 {
		return w.MaxConversations
	}
	return DefaultWarmConversations
}

func (w *Warm) idle() time.Duration {
	if w.Idle > 0 {
		return w.Idle
	}
	return DefaultWarmIdle
}

func (w *Warm) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Warm) maxBytes() int {
	if w.MaxBytes > 0 {
		return w.MaxBytes
	}
	return DefaultWarmBytes
}

// take returns what the last turn of agent's thread left, kept in dir, and
// keeps it no longer: the turn holds it alone, its files the turn's own.
// Nil: nothing is kept.
func (w *Warm) take(agent, thread, dir string) *warmConv {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	c := w.drop(warmKey{agent, thread})
	w.mu.Unlock()
	if c != nil && (c.dir != dir || w.now().Sub(c.at) > w.idle()) { // another home's agent of the same name, or idle
		c.close()
		return nil
	}
	return c
}

// drop takes the conversation kept by k out of w, its room given back to
// the pool, or returns nil. w.mu is held; the caller closes it.
func (w *Warm) drop(k warmKey) *warmConv {
	c := w.kept[k]
	if c != nil {
		delete(w.kept, k)
		w.bytes -= c.bytes
		w.Pool.Put(warmFiles)
	}
	return c
}

// leastUsed is the key of the conversation used least lately, and false
// when w keeps none. w.mu is held.
func (w *Warm) leastUsed() (warmKey, bool) {
	var (
		lk    warmKey
		least *warmConv
	)
	for k, o := range w.kept {
		if least == nil || o.used < least.used {
			lk, least = k, o
		}
	}
	return lk, least != nil
}

// put keeps c for the next turn of agent's thread, letting go of the
// conversations used least lately while past its bounds or while its
// pool has no room for c's files. One already kept (by another Runner's
// turn) is let go of: c is the newer.
func (w *Warm) put(agent, thread string, c *warmConv) {
	c.bytes = c.msgs.prefix.Size()
	for _, n := range c.size {
		c.bytes += 2 * n // the event decoded, and its message
	}
	if c.bytes > w.maxBytes() {
		c.close()
		return
	}
	var out []*warmConv
	defer func() {
		for _, o := range out {
			o.close()
		}
	}()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kept == nil {
		w.kept = make(map[warmKey]*warmConv)
	}
	k := warmKey{agent, thread}
	if old := w.drop(k); old != nil {
		out = append(out, old)
	}
	w.clock++
	c.used, c.at = w.clock, w.now()
	for ok, o := range w.kept {
		if c.at.Sub(o.at) > w.idle() {
			out = append(out, w.drop(ok))
		}
	}
	for !w.Pool.Keep(warmFiles) {
		lk, ok := w.leastUsed()
		if !ok { // no room in the pool for any: c is not kept
			out = append(out, c)
			return
		}
		out = append(out, w.drop(lk))
	}
	w.kept[k] = c
	w.bytes += c.bytes
	for len(w.kept) > w.maxConversations() || w.bytes > w.maxBytes() {
		lk, _ := w.leastUsed()
		out = append(out, w.drop(lk))
	}
}

// Forget lets go of what is kept for agent's conversations: its agent
// sleeps, or leaves. A turn running keeps its own until it ends.
func (w *Warm) Forget(agent string) {
	if w == nil {
		return
	}
	var out []*warmConv
	w.mu.Lock()
	for k := range w.kept {
		if k.agent == agent {
			out = append(out, w.drop(k))
		}
	}
	w.mu.Unlock()
	for _, c := range out {
		c.close()
	}
}

// Release lets go of everything kept: the process is idle.
func (w *Warm) Release() {
	if w == nil {
		return
	}
	var out []*warmConv
	w.mu.Lock()
	for k := range w.kept {
		out = append(out, w.drop(k))
	}
	w.kept = nil
	w.mu.Unlock()
	for _, c := range out {
		c.close()
	}
}

// Len is how many conversations w keeps, and about how many bytes.
func (w *Warm) Len() (int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.kept), w.bytes
}

// close closes c's conversation and the files kept with it.
func (c *warmConv) close() {
	if c.conv != nil {
		c.conv.Close()
		c.conv = nil
	}
	c.closeFiles()
}

// closeFiles closes the files kept with c's conversation.
func (c *warmConv) closeFiles() {
	if c.dirOpen {
		unix.Close(c.dirFD)
	}
	c.dirFD, c.dirOpen = 0, false
	c.told.Close()
	c.ids.Discard() // see idempotency.Index: another turn may have written it since
	c.ids = nil
	c.copy.Close()
	if c.home != nil {
		c.home.Drop()
		c.home = nil
	}
}

// markTold writes seq as told through the told file kept open with agent's
// conversation thread, kept in dir, and reports whether one was. A turn
// takes the conversation out of w before it uses the file, and w lets go
// of it before closing it, so w's lock keeps the file to this call. Else
// the caller opens the file itself.
func (w *Warm) markTold(agent, thread, dir string, seq int64) (bool, error) {
	if w == nil {
		return false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.kept[warmKey{agent, thread}]
	if c == nil || c.dir != dir {
		return false, nil
	}
	return c.told.Write(seq)
}

// takeDir takes the folder kept open: -1 when none is.
func (c *warmConv) takeDir() int {
	fd := c.dirFD
	if !c.dirOpen {
		fd = -1
	}
	c.dirFD, c.dirOpen = 0, false
	return fd
}

// keptIDs takes the id index the turn before left open, when the turn
// took its conversation warm: nothing changed since, so it holds every
// message through the last seq. Nil when none was kept.
func (t *turn) keptIDs() *idempotency.Index {
	if t.warm == nil {
		return nil
	}
	x := t.warm.ids
	t.warm.ids = nil
	if x != nil {
		x.Kept()
	}
	return x
}

// keepEvent adds the event the turn just appended, b, to the events it
// keeps for the next turn, decoded from its bytes as a read would decode
// them, when they end with the event before it.
func (t *turn) keepEvent(b []byte) {
	w := t.warm
	if w == nil || len(w.log) == 0 {
		return
	}
	var e event.Event
	if err := t.dec.Decode(b, &e); err != nil || e.Seq != w.log[len(w.log)-1].Seq+1 {
		w.log, w.size, w.toks = nil, nil, nil
		return
	}
	w.log = append(w.log, e)
	w.size = append(w.size, len(b))
	w.toks = append(w.toks, prompt.EventTokens(&e))
}

// dropWarm keeps nothing of the turn for the next: what it wrote is not
// known.
func (t *turn) dropWarm() {
	t.keep = false
	if t.warm != nil {
		t.warm.closeFiles()
	}
	t.warm = nil
}

// messages is the model's messages of events, the window, for req, which
// is given the wire bytes kept of them in provider's format; text says the
// calls are written as text. Where the turns before made the same window,
// only what came since is made and encoded. A Runner without a Warm makes
// and encodes all of them each time.
func (t *turn) messages(req *model.Request, events []event.Event, provider string, text bool, note string) {
	if t.warm == nil {
		req.Messages, req.Prefix = prompt.Messages(events), nil
		if text {
			req.Messages = prompt.CallsAsText(req.Messages)
		}
		if note != "" {
			req.Messages = prompt.WithNote(req.Messages, note)
		}
		return
	}
	m := &t.warm.msgs
	req.Messages = m.messages(events)
	if text {
		req.Messages = m.asText(req.Messages)
	}
	if note != "" {
		req.Messages = prompt.WithNote(req.Messages, note)
	}
	m.encode(req, provider, text)
}

// backward calls fn with the conversation's events from its last back,
// while fn returns true: from the events the turn kept when they end with
// the last, else read from the store. fn may keep the event it is given.
func (t *turn) backward(ctx context.Context, fn func(e *event.Event) bool) error {
	if w := t.warm; w != nil && len(w.log) > 0 && w.log[len(w.log)-1].Seq == t.last {
		for i := len(w.log) - 1; i >= 0; i-- {
			e := w.log[i]
			if !fn(&e) {
				return nil
			}
		}
		if w.log[0].Seq == 1 {
			return nil
		}
		// Past what was kept: the rest from the store.
		return t.readBackward(ctx, w.log[0].Seq-1, fn)
	}
	return t.readBackward(ctx, store.FromLast, fn)
}

// readBackward calls fn with the events read from the store from seq from
// back, while fn returns true.
func (t *turn) readBackward(ctx context.Context, from int64, fn func(e *event.Event) bool) error {
	var derr error
	err := t.conv.Read(ctx, from, store.Backward, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		e := new(event.Event)
		if derr = t.dec.Decode(ev, e); derr != nil {
			derr = fmt.Errorf("event %d: %w", seq, derr)
			return false
		}
		return fn(e)
	})
	if err == nil {
		err = derr
	}
	return err
}
