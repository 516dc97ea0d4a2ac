package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/instructions"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/running"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/summary"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// Errors a turn returns, besides the store's and the model's.
var (
	// ErrThreadClash comes when a thread's folder holds another thread:
	// only in a home written before every thread had a folder of its own,
	// where a plain name (telegram-42) is the folder the rule then made of
	// another's (telegram:42), whose conversation is kept there.
	ErrThreadClash = errors.New("turn: thread folder holds another thread")
	// ErrBadMessage comes when a message cannot be taken; nothing is written.
	ErrBadMessage = errors.New("turn: bad message")
	// ErrStopped comes when a turn was ended by the Runner's Stop: the
	// process stopped and the turn ran past its grace. What it wrote stays;
	// the next turn takes the conversation from there.
	ErrStopped = errors.New("turn: ended by the process's stop")
	// ErrTimeout comes when a turn ran past its [turn] timeout: its model
	// and tool calls were ended there, the calls' results and the text the
	// model had said so far were written, and nothing more. The next turn
	// takes the conversation from there.
	ErrTimeout = errors.New("turn: ran past its time")
	// ErrBusy comes when the conversation's folder stayed locked by
	// another process's turn (or a process stuck holding it) until the
	// turn's time or its caller ran out; nothing of the message is
	// written, and sending it again later may be answered.
	ErrBusy = errors.New("turn: the conversation is held by another process's turn")
)

// DefaultTimeout is a turn's whole time, every round of model and tool
// calls together, when the spec's [turn] timeout does not say: room for
// every round of a slow model and slow tools, short of a turn that never
// ends.
const DefaultTimeout = time.Hour

// MaxTextBytes is the longest message text taken.
const MaxTextBytes = 256 << 10

// Runner takes an agent's turns. It keeps nothing of a conversation between
// turns but what its Warm keeps, which a turn uses only once it finds
// nothing changed: each turn reads what it needs through the store and
// writes there.
// It is safe for concurrent use; turns of one conversation run one at a
// time, turns of different conversations at once, and a message sent to a
// conversation while its turn runs steers that turn (see steer.go).
type Runner struct {
	Agent   home.Agent
	Getenv  func(string) string // the environment: LNK_MODEL_PROXY and the rest; nil is an empty one
	HTTP    *http.Client        // for the model proxy
	Now     func() time.Time    // the clock; nil means time.Now
	Metrics *metrics.Agent      // may be nil
	Open    Opener              // how conversations are opened; needed
	Tools   *tools.Set          // the agent's tools; nil offers none
	Log     *slog.Logger        // a failed turn, a fallback, a lease taken over; nil logs nothing

	// Untold, when not nil, is given each answer that a process which died
	// wrote and never told (see package idempotency), once, by the next turn of its
	// conversation: the server keeps it for _link/recover. A caller of
	// Message that tells its answers marks each told with MarkTold.
	Untold func(thread string, a Answer)

	// Stop, once done, ends every running turn with ErrStopped: its model
	// and tool calls are cancelled and it writes nothing more. A graceful
	// stop cancels it when its grace is over. Nil: turns run to their end.
	Stop context.Context

	// Settings, when not nil, are the agent's settings held in memory, as
	// a blank unit is bound with them: config.json is not read. Nil: each
	// turn reads config.json.
	Settings *settings.Settings

	// Process is what the process's Runners share: their warm cache,
	// the bound on turns, the tracer and the model facts.
	Process

	// HoldHome has each turn hold the agent's home shared while it runs,
	// and while what it composed is kept warm (see home.Hold), so lnk agent
	// chat convert and repair, which hold it exclusive, never run beside a
	// turn: a message while they run is home.ErrConverting, nothing of it
	// written.
	HoldHome bool

	locks    running.Turns[Message] // the conversations' turns in this process, and their inboxes
	home     home.Hold              // the home's lock while a turn runs or a conversation is warm, with HoldHome
	telling  idempotency.Tellings   // answers given and not yet marked told
	cache    atomic.Pointer[runnerCache]
	storeErr atomic.Pointer[error] // why the last open of a conversation's store failed; nil once one opened
}

// Message is a message to the agent.
type Message struct {
	ID         string // the sender's message id: the same id twice is one message (see package idempotency)
	Text       string
	From       event.Sender
	Owner      bool
	Connection string
	Tools      []string // Link-Tools: narrows the conversation's tools, never widens them; nil leaves them

	// Answered, when not nil, is told the answer before the turn that gave
	// it summarizes the conversation (see summary.go), which Message waits
	// for: a server replies from here. It is called only when a summary
	// follows, at most once; Message returns that answer again. Without a
	// summary, Message returns once the turn has let the conversation go.
	Answered func(Answer)

	// TraceFrom, when not nil, is the caller's request's header: the
	// turn's span continues its traceparent and tracestate.
	TraceFrom http.Header

	// OnTool, when not nil, is told each tool call of the message's own
	// turn as it is made, and then its outcome, on the goroutine that
	// calls onText, so the two are told in the order they happen: what a
	// streamed answer's call and result events say.
	OnTool func(ToolStep)

	// Detach, when not nil, is given what remains of a turn once Answered
	// was told its answer and a summary follows: the summary, and letting
	// the conversation and the turn's place go. The caller runs it on a
	// goroutine of its own, and Message returns at once, so the caller's
	// goroutine is free once its answer is given. Nil: Message runs it.
	Detach func(rest func())
}

// Answer is a turn's answer.
type Answer struct {
	Thread string
	Seq    int64 // the answer's seq
	Text   string
	Usage  event.Usage
	Repeat bool // the message was already answered: this is that answer
	Ended  bool // the turn was asked to end (Runner.End): this is what it had
	// Shared says the answer is also an earlier message's, whose caller is
	// told it: the message steered a turn that answered both at once, and a
	// bridge relays the answer once, as the earlier caller's.
	Shared bool
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
// ctx only bounds waiting for the conversation's previous turn, in this
// process or another (ErrBusy), until a turn has taken the message to
// steer it: one handed back then has its own turn whatever ctx says, so it
// is never dropped. A message taken before (see package idempotency) is told its
// answer again, or has its turn go on. Only the Runner's Stop and the
// turn's time ([turn] timeout, ErrTimeout) end a turn before its end.
//
// When a turn of the conversation runs in this process, the message steers
// it instead (see steer.go): that turn appends it and answers it, and
// Message returns the answer after it once that turn ends. A message that
// comes too late for it waits for a turn of its own.
func (r *Runner) Message(ctx context.Context, thread string, m Message, onText func(string)) (Answer, error) {
	if err := m.Check(); err != nil {
		return Answer{}, err
	}
	dir, err := r.Folder(ctx, thread)
	if err != nil {
		return Answer{}, err
	}
	var refusedBy *running.Inbox[Message] // a turn that refused the message is not offered it again
	for {
		var (
			s     *running.Steer[Message]
			to    *running.Inbox[Message]
			offer func(*running.Inbox[Message]) bool
		)
		if m.Tools == nil { // a list of tools narrows from a turn's beginning
			offer = func(in *running.Inbox[Message]) bool {
				if in == refusedBy {
					return false
				}
				s, to = in.Offer(m, onText), in
				return s != nil
			}
		}
		h, err := r.locks.Lock(ctx, dir, offer)
		if err != nil {
			return Answer{}, err
		}
		if h == nil {
			res := s.Wait()
			if res.Refused {
				// Handed back: it waits for a turn of its own however
				// long, its caller gone or not, as it would have been
				// answered in the turn that handed it back.
				refusedBy, ctx = to, context.WithoutCancel(ctx)
				continue
			}
			a := answerOf(to.Thread(), res.Told) // the thread of the turn it steered
			a.Shared = res.Shared
			return a, nil
		}
		// A message handed back by the turn it steered was taken: it has
		// its turn whatever the bound, as it would have had in that one.
		if refusedBy == nil {
			if err := r.Turns.Begin(); err != nil {
				h.Unlock()
				return Answer{}, err
			}
		} else {
			r.Turns.Force()
		}
		return r.take(ctx, h, thread, dir, &m, onText)
	}
}

// Full says whether a message to thread would be refused for want of a
// place for its turn (budget.ErrFull) were it sent now: every place is
// taken, and no turn of the conversation runs or waits here, which the
// message would steer or wait for. A server answers it before reading
// the message; Message decides in the end.
func (r *Runner) Full(thread string) bool {
	if r.Turns == nil || r.Turns.Running() < r.Turns.Max() {
		return false
	}
	dir, err := r.Folder(context.Background(), thread)
	return err == nil && !r.locks.Held(dir)
}

// take takes the turn of a conversation it holds, in the place Message
// took for it.
func (r *Runner) take(ctx context.Context, h *running.Hold[Message], thread, dir string, m *Message, onText func(string)) (Answer, error) {
	t, ctx, err := r.begin(ctx, h, thread, dir, m)
	if err != nil {
		return Answer{}, err
	}
	detached := false
	defer func() {
		if !detached {
			t.life.ends.run()
		}
	}()
	var a Answer
	err = t.answer(ctx, m, onText, &a)
	t.life.err = err
	after := t.sum.after
	if err = t.answered(ctx, a.Seq, err); err != nil || after == nil {
		return a, err
	}
	detached = t.follow(ctx, m, &a, after)
	return a, nil
}

// follow summarizes after a turn's answer a, once m's caller is told it:
// on the caller's goroutine when it takes it (m.Detach), ends too (true).
func (t *turn) follow(ctx context.Context, m *Message, a *Answer, after *summary.Ask) bool {
	if m.Answered != nil {
		m.Answered(*a)
	}
	if m.Detach != nil {
		m.Detach(func() {
			t.summarize(ctx, after)
			t.life.ends.run()
		})
		return true
	}
	t.summarize(ctx, after)
	return false
}

// begin makes the turn take will run, and its context; what it holds is
// let go of by its ends, which begin runs itself when it fails. A function
// of its own, so its frame is not under the turn's waits.
func (r *Runner) begin(ctx context.Context, h *running.Hold[Message], thread, dir string, m *Message) (*turn, context.Context, error) {
	t := &turn{r: r, thread: thread, dir: dir, life: lifetime{ends: ends{r.Turns.End, h.Unlock}}}
	if r.Stop != nil && r.Stop.Err() != nil {
		t.life.ends.run()
		return nil, nil, fmt.Errorf("%w: the turn was not begun", ErrStopped)
	}
	caller := ctx
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	t.life.ends.add(func() { cancel(nil) })
	if r.Stop != nil {
		stop := context.AfterFunc(r.Stop, func() { cancel(ErrStopped) })
		t.life.ends.add(func() { stop() })
	}
	h.In.SetThread(thread)
	if r.HoldHome {
		if err := r.home.Take(r.Agent.Dir); err != nil {
			t.life.ends.run()
			return nil, nil, err
		}
		t.life.ends.add(r.home.Drop)
	}
	t.life.start = r.now()
	t.c, t.ops = r.caches(), operations{in: h.In, caller: caller, cancel: cancel}
	t.life.span = r.Tracer.Turn(caller, m.TraceFrom, trace.Who{Agent: r.Agent.Name, Conversation: thread})
	t.life.ends.add(func() { t.life.span.End(t.life.err) }) // once all its children have ended
	t.life.ends.add(t.close)
	return t, ctx, nil
}

// answered follows a turn, ctx its own, answered or failed with err:
// counted, logged, and err returned as its caller is told it.
func (t *turn) answered(ctx context.Context, seq int64, err error) error {
	r := t.r
	if err != nil && context.Cause(ctx) == ErrStopped && !errors.Is(err, ErrStopped) {
		err = fmt.Errorf("%w: %v", ErrStopped, err)
	}
	if err != nil && endedBy(ctx) && !errors.Is(err, ErrEnded) {
		err = fmt.Errorf("%w: %v", ErrEnded, err)
	}
	t.warm.keep = err == nil
	if err == nil && r.Untold != nil && seq != 0 {
		r.telling.Add(t.dir, t.once.lastAnswer) // its callers mark it told
	}
	t.ops.in.Finish() // from here a message waits for a turn of its own
	took := r.now().Sub(t.life.start)
	r.Metrics.Turn(took, err, t.read, t.written)
	r.Turns.Took(took) // a refused message is told a turn's length lately
	if err != nil {
		t.log().Error("turn failed", "seconds", took.Seconds(), "error", err)
	}
	return err
}

// ends is what a turn lets go of when it ends, run in the reverse of the
// order added, as deferred calls are.
type ends []func()

func (e *ends) add(f func()) { *e = append(*e, f) }

func (e ends) run() {
	for i := len(e) - 1; i >= 0; i-- {
		e[i]()
	}
}

// logger is the runner's logger, or one that logs nothing.
func (r *Runner) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// log is the runner's logger with the turn's agent, thread, and message's
// seq once it is written. Never a message's text.
func (t *turn) log() *slog.Logger {
	l := t.r.logger().With("agent", t.r.Agent.Name, "thread", t.thread)
	if t.seq != 0 {
		l = l.With("seq", t.seq)
	}
	return l
}

// turn is one turn's state, gone when the turn ends: what every step
// uses, and beside it what each step owns.
type turn struct {
	r       *Runner
	c       *runnerCache // the Runner's, as the turn began
	thread  string
	dir     string
	conv    store.Conversation
	dec     event.Decoder
	buf     []byte
	last    int64 // the conversation's last seq, as this turn has written it
	seq     int64 // the seq of the turn's message, once written
	read    int64 // the bytes it read, of the conversation and the home
	written int64 // and wrote

	lock  folderLock   // open: the lease, or the folder's lock
	warm  warmth       // open and close: what it keeps for the next turn
	once  onceState    // the id index, and a message taken before
	ops   operations   // what reaches the turn while it runs, and its time
	comp  composing    // compose: the prompt as it read it
	tools toolUse      // the tools it offers
	win   windowState  // readWindow: the window's events and their counts
	sum   summaryState // rounds: the window's share, and the summary due after the answer
	life  lifetime     // begin and take: when it began, its span, what it lets go of
}

// lifetime is a turn's from its beginning to its end.
type lifetime struct {
	start time.Time  // when it began
	span  trace.Turn // the turn's span, its calls' and appends' parent (see trace.go)
	err   error      // what its span ends with
	ends  ends       // what it lets go of when it ends, in reverse
}

// close lets go of what the turn holds, or puts it back for the next turn
// where it is kept (see warm.go).
func (t *turn) close() {
	t.flushIDs(t.keeping())
	t.win.Give()
	t.tools.offer.End()
	if d, ok := t.conv.(store.Deferred); ok {
		// A turn that ended between its message and its answer makes the
		// message durable, and lets go of what a store holds for it (the
		// log's writers' lock), whether the conversation is closed or kept.
		if err := d.Commit(context.Background()); err != nil {
			t.log().Error("the message not made durable", "error", err)
			t.warm.keep = false
		}
	}
	t.r.Ends.Remove(&t.ops.watch) // before another turn can take the conversation
	t.leaveFolder()
	fd := t.lock.fd
	if t.lock.release != nil {
		t.lock.release()
	}
	if t.keeping() {
		t.putBack(fd)
		return
	}
	t.once.ids.Discard() // its header written above, or let lag if the turn meant to keep it
	t.once.ids = nil
	t.warm.kept.CloseFiles() // what it kept open goes with it
	if t.conv != nil {
		t.conv.Close()
	}
}

// Rest lets go of what the Runner keeps between turns: its conversations
// kept warm, and what its turns read of the agent's files, of the model
// facts and of runtimes, made again by its next turn. Its agent sleeps or
// leaves, or the process went idle.
func (r *Runner) Rest() {
	r.Warm.Forget(r.Agent.Name)
	r.cache.Store(nil)
	r.locks.Rest()
	r.telling.Rest()
}

// runnerCache is what a Runner's turns keep of what they read, until Rest.
type runnerCache struct {
	prompts  instructions.Cache // what the turn read of the agent's home, until its files change
	facts    facts.Cache        // the user's model facts, until they change, when the Runner has no Facts
	runtimes facts.Runtimes     // what runtimes said of their models, for a minute
}

// caches is what the Runner's turns keep, made when the last Rest let go
// of it.
func (r *Runner) caches() *runnerCache {
	for {
		if c := r.cache.Load(); c != nil {
			return c
		}
		r.cache.CompareAndSwap(nil, new(runnerCache))
	}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// answer is a turn's steps to its answer.
func (t *turn) answer(ctx context.Context, m *Message, onText func(string), to *Answer) error {
	s, err := t.settings()
	if err != nil {
		return err
	}
	stop := t.timeOn(s)
	err = t.steps(ctx, s, m, onText, to)
	stop()
	return timedOut(ctx, err)
}

// timedOut is err, a turn's with ctx, said as the turn's time's when that
// ended it.
func timedOut(ctx context.Context, err error) error {
	if err != nil && pastTime(ctx) && !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrBusy) {
		return fmt.Errorf("%w: %v", context.Cause(ctx), err)
	}
	return err
}

// timeOn cancels the turn's own context at its time, [turn] timeout, the
// cause ErrTimeout saying the time (no context of its own); it returns its stop.
func (t *turn) timeOn(s *settings.Settings) func() bool {
	t.ops.timeout = time.Duration(s.Turn.Timeout)
	if t.ops.timeout <= 0 {
		t.ops.timeout = DefaultTimeout
	}
	return time.AfterFunc(t.ops.timeout, func() { t.ops.cancel(fmt.Errorf("%w of %v", ErrTimeout, t.ops.timeout)) }).Stop
}

// pastTime says whether ctx, a turn's, was ended by the turn's time.
func pastTime(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrTimeout) }

// steps are a turn's steps once its settings are read. What comes before
// the rounds and after them is in functions of their own, whose frames are
// gone while the model is waited on (see TestWaitingTurnStack).
func (t *turn) steps(ctx context.Context, s *settings.Settings, m *Message, onText func(string), to *Answer) error {
	if err := t.write(ctx, s, m, to); err != nil || to.Seq != 0 {
		return err
	}
	w := &t.comp.prep
	if err := t.prepare(ctx, s, m, w); err != nil {
		return err
	}
	text := func(frag string) {
		if onText != nil {
			onText(frag)
		}
		t.ops.in.Text(frag)
	}
	rctx, stop := t.endable(ctx)
	defer stop()
	reply, all, err := t.rounds(rctx, s, w.req, &w.cp, w.events, text)
	t.win.Keep(all)
	// A turn that made room went on in a slice of its own, and one that
	// failed may not say what it appended: what it wrote is not known.
	t.win.Whole = t.win.Whole || err != nil || t.sum.madeRoom
	if err != nil {
		return err
	}
	t.finish(ctx, s, w, all)
	*to = answerOf(t.thread, reply)
	return nil
}

// finish is what a turn does once its answer is durable: the copy for
// people, the window kept for the next turn, and whether a summary is due.
func (t *turn) finish(ctx context.Context, s *settings.Settings, w *opened, all []event.Event) {
	// A copy for people that cannot be written (a full disk, a chat.md
	// that is not a file) does not fail the turn. It is derived, and the
	// next turn that can write it makes it again whole.
	n := len(w.events)
	if t.sum.madeRoom {
		n = -1 // the turn's message may have left its window: made from the events
	}
	if err := t.addToCopy(ctx, all, n); err != nil {
		t.log().Error("the copy for people not written", "error", err)
	}
	t.win.Items = window.Items(t.win.Items, all, t.tokensOf(all))
	t.sum.after = summary.Due(s, w.req, all, t.win.Items, w.cp, w.share, t.tools.offer != nil && t.tools.offer.Offered(prompt.NotesTool))
}
