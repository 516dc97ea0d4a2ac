package turn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	eventlog "lnk.dev/linkharness/store/log"
)

// Errors a turn returns, besides the store's and the model's.
var (
	// ErrThreadClash comes when a thread's folder holds another thread,
	// whose name maps to the same folder (telegram:42 and telegram-42).
	ErrThreadClash = errors.New("turn: thread folder holds another thread")
	// ErrBadMessage comes when a message cannot be taken; nothing is written.
	ErrBadMessage = errors.New("turn: bad message")
)

// MaxTextBytes is the longest message text taken.
const MaxTextBytes = 256 << 10

// Runner takes an agent's turns. It keeps nothing of a conversation between
// turns: each turn reads what it needs through the store and writes there.
// It is safe for concurrent use; turns of one conversation run one at a
// time, turns of different conversations at once.
type Runner struct {
	Agent   home.Agent
	Getenv  func(string) string // the environment: LNK_MODEL_PROXY and the rest
	HTTP    *http.Client        // for the model proxy
	Now     func() time.Time    // the clock; nil means time.Now
	Metrics *Metrics            // may be nil

	locks keyedMutex
}

// Message is a message to the agent.
type Message struct {
	ID         string // the sender's message id: the same id twice is one message
	Text       string
	From       store.Sender
	Owner      bool
	Connection string
}

// Answer is a turn's answer.
type Answer struct {
	Thread string
	Seq    int64 // the answer's seq
	Text   string
	Usage  store.Usage
	Repeat bool // the message was already answered: this is that answer
}

// Check says what is wrong with a message before anything is written.
func (m *Message) Check() error {
	switch {
	case strings.TrimSpace(m.Text) == "":
		return fmt.Errorf("%w: no text", ErrBadMessage)
	case len(m.Text) > MaxTextBytes:
		return fmt.Errorf("%w: text of %d bytes, over %d", ErrBadMessage, len(m.Text), MaxTextBytes)
	case len(m.ID) > 200:
		return fmt.Errorf("%w: id of %d bytes, over 200", ErrBadMessage, len(m.ID))
	case len(m.From.ID) > 200 || len(m.From.Name) > 200:
		return fmt.Errorf("%w: from is over 200 bytes", ErrBadMessage)
	case len(m.Connection) > 100:
		return fmt.Errorf("%w: connection of %d bytes, over 100", ErrBadMessage, len(m.Connection))
	}
	return nil
}

// Message takes one turn: the message is appended, the model answers, and
// the answer is appended and returned. onText, if not nil, gets the answer's
// text as it streams. The turn runs to its end even when ctx is done, since
// its calls were made and its answer belongs in the conversation either way;
// ctx only bounds waiting for the conversation's previous turn.
func (r *Runner) Message(ctx context.Context, thread string, m Message, onText func(string)) (Answer, error) {
	if err := m.Check(); err != nil {
		return Answer{}, err
	}
	dir, err := r.Agent.Path(home.Chat, thread)
	if err != nil {
		return Answer{}, err
	}
	unlock, err := r.locks.lock(ctx, dir)
	if err != nil {
		return Answer{}, err
	}
	defer unlock()
	ctx = context.WithoutCancel(ctx)

	start := r.now()
	t := &turn{r: r, thread: thread, dir: dir}
	defer t.close()
	a, err := t.run(ctx, m, onText)
	r.Metrics.turn(start, r.now(), t.modelTime, t.read, t.written, err)
	return a, err
}

// turn is one turn's state, gone when the turn ends.
type turn struct {
	r      *Runner
	thread string
	dir    string
	conv   store.Conversation
	dec    store.Decoder
	buf    []byte

	last      int64 // the conversation's last seq, as this turn has written it
	modelTime time.Duration
	read      int64
	written   int64
}

func (t *turn) close() {
	if t.conv != nil {
		t.conv.Close()
	}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// run is a turn's steps, in order.
func (t *turn) run(ctx context.Context, m Message, onText func(string)) (Answer, error) {
	if err := t.open(ctx); err != nil {
		return Answer{}, err
	}
	if a, done, err := t.repeated(ctx, m); err != nil || done {
		return a, err
	}
	if _, err := t.appendMessage(ctx, m); err != nil {
		return Answer{}, err
	}
	s, err := t.settings()
	if err != nil {
		return Answer{}, err
	}
	sections, err := t.sections(s)
	if err != nil {
		return Answer{}, err
	}
	system := prompt.System(sections)
	size := modelWindow(&s)
	share := window.Share(size, answerRoom(&s, size), window.Tokens(system), s.Window.Margin)
	events, cp, err := t.readWindow(ctx, share)
	if err != nil {
		return Answer{}, err
	}
	req := &model.Request{
		Model:     providerModel(s.Provider(), s.Model.Name),
		System:    system,
		Messages:  prompt.Messages(events),
		MaxTokens: answerRoom(&s, size),
	}
	resp, err := t.callModel(ctx, &s, req, onText)
	if err != nil {
		return Answer{}, err
	}
	answer, err := t.appendAnswer(ctx, &s, resp, cp, events)
	if err != nil {
		return Answer{}, err
	}
	if err := t.addToCopy(ctx, events, answer); err != nil {
		return Answer{}, fmt.Errorf("the copy for people: %w", err)
	}
	return Answer{Thread: t.thread, Seq: answer.Seq, Text: resp.Text, Usage: resp.Usage}, nil
}

// open opens the conversation and checks its folder holds this thread.
func (t *turn) open(ctx context.Context) error {
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return err
	}
	conv, err := eventlog.Open(t.dir)
	if err != nil {
		return err
	}
	t.conv = conv
	if t.last, err = conv.Last(ctx); err != nil || t.last == 0 {
		return err
	}
	var first string
	err = conv.Read(ctx, 1, false, func(_ int64, ev []byte) bool {
		t.read += int64(len(ev))
		var e store.Event
		if err := t.dec.Decode(ev, &e); err == nil {
			first = e.Thread
		}
		return false
	})
	if err != nil {
		return err
	}
	if first != t.thread {
		return fmt.Errorf("%w: %q holds %q, not %q", ErrThreadClash, t.dir, first, t.thread)
	}
	return nil
}

// repeatWindow is how many recent events are searched for a message's id.
const repeatWindow = 32

// repeated finds a message already taken, by its id, among the last events.
// Answered, its answer is returned; not answered (its turn crashed), the
// turn goes on without appending it again.
func (t *turn) repeated(ctx context.Context, m Message) (Answer, bool, error) {
	if m.ID == "" || t.last == 0 {
		return Answer{}, false, nil
	}
	var (
		a     Answer
		found bool
		n     int
		e     store.Event
		err   error
	)
	rerr := t.conv.Read(ctx, 0, true, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		if err = t.dec.Decode(ev, &e); err != nil {
			return false
		}
		switch {
		case e.Type == store.TypeAnswer && len(e.Calls) == 0:
			a = Answer{Thread: t.thread, Seq: seq, Text: e.Text, Usage: e.Usage, Repeat: true}
		case e.Type == store.TypeMessage && e.ID == m.ID:
			found = true
			return false
		}
		n++
		return n < repeatWindow
	})
	if rerr != nil {
		return Answer{}, false, rerr
	}
	if err != nil {
		return Answer{}, false, err
	}
	if !found {
		return Answer{}, false, nil
	}
	if a.Seq != 0 {
		return a, true, nil
	}
	return Answer{}, false, errors.New("turn: message " + m.ID + " is being answered, or its turn ended without an answer")
}

func (t *turn) appendEvent(ctx context.Context, e *store.Event) error {
	e.Seq = t.last + 1
	if t.last == 0 {
		e.Thread = t.thread
	}
	t.buf = store.AppendEvent(t.buf[:0], e)
	if err := t.conv.Append(ctx, e.Seq, t.buf); err != nil {
		return err
	}
	t.written += int64(len(t.buf)) + 1
	t.last = e.Seq
	return nil
}

// appendMessage appends the message with its head, durable before the
// model is asked.
func (t *turn) appendMessage(ctx context.Context, m Message) (int64, error) {
	now := t.r.now()
	e := store.Event{
		Time: now, Type: store.TypeMessage, ID: m.ID, From: m.From, Owner: m.Owner,
		Connection: m.Connection, Text: m.Text,
		Head: prompt.Head(now.Local(), m.Connection, prompt.Speaker{Name: m.From.Name, Owner: m.Owner}),
	}
	err := t.appendEvent(ctx, &e)
	return e.Seq, err
}

func (t *turn) settings() (settings.Settings, error) {
	path, err := t.r.Agent.Path(home.Config, "")
	if err != nil {
		return settings.Settings{}, err
	}
	return settings.Read(path)
}

// maxWindowRead bounds how much of a conversation one turn reads back,
// whatever the window: a window of tokens is at most about this many bytes.
const maxWindowRead = 64 << 20

// readWindow reads the tail the window needs, newest first, back to the
// latest checkpoint's start (or the first event), and returns the window's
// events oldest first with where it starts. It stops early once what it has
// read is more than the share, since a window never reaches further back.
func (t *turn) readWindow(ctx context.Context, share int) ([]store.Event, window.Checkpoint, error) {
	var (
		events []store.Event
		cp     = window.Checkpoint{Start: 1}
		found  bool
		tokens int
		bytes  int
		derr   error
	)
	err := t.conv.Read(ctx, 0, true, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		bytes += len(ev)
		events = append(events, store.Event{})
		e := &events[len(events)-1]
		if derr = t.dec.Decode(ev, e); derr != nil {
			return false
		}
		if !found && e.Window != nil && (e.Type == store.TypeAnswer || e.Type == store.TypeSummary) {
			cp, found = window.Checkpoint{Start: e.Window.Start, TokensBefore: e.Window.TokensBefore}, true
		}
		tokens += eventTokens(e)
		if found && seq <= cp.Start {
			return false
		}
		if tokens > 2*share+1 || bytes > maxWindowRead {
			if !found {
				cp = window.Checkpoint{Start: seq} // the tokens before it are not known without reading them
			}
			return false
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, cp, err
	}
	// Oldest first, from the checkpoint's start.
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	for len(events) > 0 && events[0].Seq < cp.Start {
		events = events[1:]
	}
	items := make([]window.Item, len(events))
	for i := range events {
		items[i] = window.Item{Seq: events[i].Seq, Tokens: eventTokens(&events[i]), CanStart: events[i].Type == store.TypeMessage}
	}
	next := window.Start(cp, items, share)
	for len(events) > 0 && events[0].Seq < next.Start {
		events = events[1:]
	}
	return events, next, nil
}

// eventTokens is an event's rough share of the prompt.
func eventTokens(e *store.Event) int {
	n := window.Tokens(e.Head) + window.Tokens(e.Text) + len(e.Thinking)/4
	for _, c := range e.Calls {
		n += window.Tokens(c.Name) + len(c.Args)/4
	}
	return n + 4
}

// callModel asks the model through the proxy.
func (t *turn) callModel(ctx context.Context, s *settings.Settings, req *model.Request, onText func(string)) (*model.Response, error) {
	c, err := model.New(s.Provider(), t.r.getenv, t.r.HTTP)
	if err != nil {
		return nil, err
	}
	start := t.r.now()
	resp, err := c.Call(ctx, req, onText)
	t.modelTime += t.r.now().Sub(start)
	if err != nil {
		if errors.Is(err, model.ErrTooLong) {
			return nil, fmt.Errorf("%w: the prompt sent was at most %d tokens of window; set [window] max in the agent's spec to change it", err, modelWindow(s))
		}
		return nil, err
	}
	return resp, nil
}

func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

// appendAnswer appends the model's answer with what the provider reported
// and the window's checkpoint.
func (t *turn) appendAnswer(ctx context.Context, s *settings.Settings, resp *model.Response, cp window.Checkpoint, events []store.Event) (*store.Event, error) {
	e := store.Event{
		Time: t.r.now(), Type: store.TypeAnswer, Text: resp.Text, Thinking: resp.Thinking, Calls: resp.Calls,
		Model: s.Model.Name, Provider: s.Provider(), ResponseID: resp.ResponseID, Usage: resp.Usage,
		LatencyMS: resp.Latency.Milliseconds(),
		Window:    &store.Window{Start: cp.Start, TokensBefore: cp.TokensBefore},
	}
	if len(events) > 0 && events[0].Seq == cp.Start {
		e.Window.StartTime = events[0].Time
	}
	if err := t.appendEvent(ctx, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// modelWindow is the model's window in tokens: the spec's max when set,
// else what is known of the model (model facts come with the models work),
// else [window] unknown.
func modelWindow(s *settings.Settings) int {
	if s.Window.Max > 0 {
		return s.Window.Max
	}
	return s.Window.Unknown
}

// answerRoom is the tokens kept for the answer.
func answerRoom(s *settings.Settings, size int) int {
	if s.Model.Answer > 0 {
		return s.Model.Answer
	}
	return int(s.Window.Answer * float64(size))
}

// providerModel is the provider's own name for a model: OpenRouter names
// every model maker/model; the others know it without the maker.
func providerModel(provider, name string) string {
	if provider == "openrouter" {
		return name
	}
	if _, m, ok := strings.Cut(name, "/"); ok {
		return m
	}
	return name
}

// keyedMutex serializes turns per conversation in the process. An entry
// lives only while a turn holds or waits for it, so an idle agent holds
// nothing here. The zero value is ready to use.
type keyedMutex struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]*keyed
}

type keyed struct {
	ch   chan struct{} // holds one token while the conversation is free
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyed{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyed{ch: make(chan struct{}, 1)}
		e.ch <- struct{}{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case <-e.ch:
		return func() { e.ch <- struct{}{}; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
