package turn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

func newRunner(t *testing.T, script *scripted.Script) (*Runner, *scripted.Server) {
	t.Helper()
	model, proxy := hometest.Model(t, script)
	dir := filepath.Join(t.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	env := map[string]string{"LNK_MODEL_PROXY": proxy}
	return &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return env[k] }, HTTP: &http.Client{}, Metrics: &metrics.Agent{Name: "ada"}, Open: openLog, Process: Process{Warm: &warm.Cache{}}}, model
}

// openLog keeps the tests' conversations as logs: the programs wire the
// other ways, and a kind it does not keep is an error, as theirs are.
func openLog(dir, kind string) (store.Conversation, error) {
	if kind != "" && kind != "log" {
		return nil, fmt.Errorf("the tests keep conversations as logs, not %q", kind)
	}
	return eventlog.Open(dir)
}

func lastRequest(t *testing.T, m *scripted.Server) string {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not asked")
	}
	return string(reqs[len(reqs)-1])
}

// Settings and the standing instructions are read at each turn: a change
// takes effect at the next one, with no restart.
func TestReadEachTurn(t *testing.T) {
	r, m := newRunner(t, nil)
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{Text: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	if req := lastRequest(t, m); !strings.Contains(req, `"model":"claude-opus-5-5"`) || !strings.Contains(req, "You are an agent on Link") {
		t.Fatalf("first request: %s", req)
	}
	os.MkdirAll(filepath.Join(r.Agent.Dir, "instructions"), 0o700)
	os.WriteFile(filepath.Join(r.Agent.Dir, "instructions", "instruction.md"), []byte("Always answer in French."), 0o600)
	s := settings.Defaults()
	s.Model.Name = "openai/gpt-6-luna"
	s.Instructions = map[string]settings.Section{"base": {Source: "none"}}
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Message(ctx, "t", Message{Text: "two"}, nil); err != nil {
		t.Fatal(err)
	}
	req := lastRequest(t, m)
	if !strings.Contains(req, `"model":"gpt-6-luna"`) || !strings.Contains(req, "Always answer in French.") || strings.Contains(req, "You are an agent on Link") {
		t.Fatalf("second request: %s", req)
	}
	// The conversation so far goes with it, in the new provider's format.
	if !strings.Contains(req, "one") || !strings.Contains(req, "two") {
		t.Errorf("the window lost a message: %s", req)
	}
}

func TestBadMessageWritesNothing(t *testing.T) {
	r, m := newRunner(t, nil)
	for _, msg := range []Message{{Text: ""}, {Text: " \n"}, {Text: strings.Repeat("x", MaxTextBytes+1)}, {Text: "x", ID: strings.Repeat("i", 201)}} {
		if _, err := r.Message(context.Background(), "t", msg, nil); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%.20q: %v", msg.Text, err)
		}
	}
	for _, thread := range []string{"", "..", "../x", strings.Repeat("a", 300)} {
		if _, err := r.Message(context.Background(), thread, Message{Text: "x"}, nil); !errors.Is(err, home.ErrBadName) {
			t.Errorf("thread %.20q: %v", thread, err)
		}
	}
	if entries, _ := os.ReadDir(r.Agent.Dir); len(entries) != 0 {
		t.Errorf("wrote %v", entries)
	}
	if len(m.Requests()) != 0 {
		t.Error("the model was asked")
	}
}

// writeConversation writes n events, messages and answers in turn, as a
// long conversation holds them; every answer records its checkpoint.
func writeConversation(t testing.TB, dir, thread string, n int) {
	t.Helper()
	hometest.WriteLog(t, dir, thread, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), n, func(e *event.Event) {
		if e.Seq%2 == 1 {
			e.Type, e.ID, e.Text, e.Head = event.TypeMessage, fmt.Sprintf("m%d", e.Seq), fmt.Sprintf("message %d: %s", e.Seq, strings.Repeat("words ", 40)), "[head]"
		} else {
			e.Type, e.Text = event.TypeAnswer, fmt.Sprintf("answer %d: %s", e.Seq, strings.Repeat("reply ", 40))
			e.Window = &event.Window{Start: max(1, e.Seq-40), TokensBefore: 0}
		}
	})
}

// A turn reads only the tail it needs: in a conversation of 20,000 events
// it reads back to the last checkpoint, not the whole file. The first turn
// of a conversation written without its id index reads every event once,
// to make it (see idempotency.Index).
func TestReadsOnlyTheTail(t *testing.T) {
	r, m := newRunner(t, nil)
	dir, _ := r.Agent.Path(home.Chat, "long")
	writeConversation(t, dir, "long", 20000)
	fi, _ := os.Stat(filepath.Join(dir, "events.jsonl"))
	if _, err := r.Message(context.Background(), "long", Message{ID: "first", Text: "the index is made"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, idempotency.IndexFile)); err != nil {
		t.Fatalf("no id index: %v", err)
	}
	before := r.Metrics.BytesRead()
	a, err := r.Message(context.Background(), "long", Message{Text: "and now?"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Seq != 20004 {
		t.Fatalf("answer seq %d", a.Seq)
	}
	read := r.Metrics.BytesRead() - before
	if read > fi.Size()/50 {
		t.Errorf("a turn read %d bytes of a %d-byte conversation", read, fi.Size())
	}
	req := lastRequest(t, m)
	if !strings.Contains(req, "message 19999") || strings.Contains(req, "message 19001:") {
		t.Errorf("the window is not the tail from the checkpoint")
	}
}

// The window moves on at drop points once it outgrows its share, and the
// answer records where it starts. With compact_at "never", as here, that is
// all that moves it (summaries: summary_test.go).
func TestWindowDrops(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := settings.Defaults()
	s.Window.Max, s.Window.CompactAt = 2048, 0
	settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s)
	ctx := context.Background()
	var starts []int64
	for i := range 30 {
		if _, err := r.Message(ctx, "t", Message{Text: fmt.Sprintf("message %d %s", i, strings.Repeat("blah ", 60))}, nil); err != nil {
			t.Fatal(err)
		}
		dir, _ := r.Agent.Path(home.Chat, "t")
		b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var d event.Decoder
		var e event.Event
		if err := d.Decode([]byte(lines[len(lines)-1]), &e); err != nil || e.Window == nil {
			t.Fatalf("last event %s: %v", lines[len(lines)-1], err)
		}
		starts = append(starts, e.Window.Start)
	}
	moves := 0
	for i := 1; i < len(starts); i++ {
		if starts[i] < starts[i-1] {
			t.Fatalf("the window went back: %v", starts)
		}
		if starts[i] != starts[i-1] {
			moves++
		}
	}
	if moves == 0 || moves > len(starts)/3 {
		t.Errorf("the window's start moved %d times in %d turns: %v", moves, len(starts), starts)
	}
}

// Turns of one conversation run one at a time, of different ones at once;
// a message sent while its conversation's turn runs steers that turn. Each
// message is appended once, and each caller told an answer after its
// message, in a conversation whose events read in order.
func TestOneTurnAtATime(t *testing.T) {
	r, _ := newRunner(t, &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "ok", LatencyMS: 20}}})
	type told struct {
		thread, text string
		a            Answer
		err          error
	}
	out := make(chan told, 20)
	for i := range 20 {
		go func() {
			th, text := fmt.Sprintf("t%d", i%2), fmt.Sprint(i)
			a, err := r.Message(context.Background(), th, Message{Text: text}, nil)
			out <- told{th, text, a, err}
		}()
	}
	answers := map[string][]told{}
	for range 20 {
		o := <-out
		if o.err != nil {
			t.Fatal(o.err)
		}
		answers[o.thread] = append(answers[o.thread], o)
	}
	for _, th := range []string{"t0", "t1"} {
		ev := readEvents(t, r, th)
		msgs := ofType(ev, event.TypeMessage)
		if len(msgs) != 10 {
			t.Errorf("%s: %d messages, want 10", th, len(msgs))
		}
		for _, o := range answers[th] {
			var seq int64
			for _, e := range msgs {
				if e.Text == o.text {
					seq = e.Seq
				}
			}
			if e := ev[o.a.Seq-1]; e.Type != event.TypeAnswer || o.a.Seq < seq || seq == 0 {
				t.Errorf("%s: message %q (seq %d) told %+v", th, o.text, seq, o.a)
			}
		}
		if last := ev[len(ev)-1]; last.Type != event.TypeAnswer {
			t.Errorf("%s ends with a %s", th, last.Type)
		}
	}
	if n := r.locks.Len(); n != 0 {
		t.Errorf("locks held after the turns: %d", n)
	}
}

// A copy that does not end with the last answer (none was written, or it
// was cut short) is made again from every event; otherwise it is added to.
func TestCopyRemade(t *testing.T) {
	r, _ := newRunner(t, nil)
	dir, _ := r.Agent.Path(home.Chat, "c")
	writeConversation(t, dir, "c", 10)
	ctx := context.Background()
	if _, err := r.Message(ctx, "c", Message{Text: "eleven"}, nil); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "chat.md")
	b, _ := os.ReadFile(copyPath)
	for _, want := range []string{"message 1:", "answer 10:", "eleven", "<!-- lnk:answer 12 -->"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("the remade copy lacks %q:\n%s", want, b)
		}
	}
	// Cut short: remade, whole again.
	os.WriteFile(copyPath, b[:len(b)/2], 0o600)
	if _, err := r.Message(ctx, "c", Message{Text: "thirteen"}, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := os.ReadFile(copyPath)
	if !strings.HasPrefix(string(c), string(b)) || !strings.Contains(string(c), "thirteen") || strings.Count(string(c), "eleven") != 1 {
		t.Fatalf("the copy after a cut:\n%s", c)
	}
	if whole := madeCopy(t, r, "c"); whole != string(c) {
		t.Fatalf("the copy added to differs from one made from the events:\n%s\n---\n%s", c, whole)
	}
}

// A message whose id was taken is told its answer again, the first after
// it that calls no tool, however far back it is, and nothing is written;
// one taken and never answered has its turn go on.
func TestRepeatedMessage(t *testing.T) {
	r, m := newRunner(t, nil)
	dir, _ := r.Agent.Path(home.Chat, "t")
	os.MkdirAll(dir, 0o700)
	var events []event.Event
	add := func(e event.Event) {
		e.Seq, e.Time = int64(len(events)+1), time.Date(2026, 1, 1, 0, 0, len(events), 0, time.UTC)
		if e.Seq == 1 {
			e.Thread = "t"
		}
		events = append(events, e)
	}
	add(event.Event{Type: event.TypeMessage, ID: "far", Text: "long ago"})
	add(event.Event{Type: event.TypeAnswer, Text: "long ago answered"})
	for i := range 40 {
		add(event.Event{Type: event.TypeMessage, ID: fmt.Sprintf("filler-%d", i), Text: "more"})
		add(event.Event{Type: event.TypeAnswer, Text: "and more"})
	}
	add(event.Event{Type: event.TypeMessage, ID: "m-1", Text: "look it up"})
	add(event.Event{Type: event.TypeAnswer, Calls: []event.Call{{ID: "c1", Name: "web__echo", Args: []byte(`{}`)}}})
	add(event.Event{Type: event.TypeResult, CallID: "c1", Name: "web__echo", Text: "found"})
	add(event.Event{Type: event.TypeAnswer, Text: "first answer"})
	add(event.Event{Type: event.TypeMessage, ID: `q"é\1`, Text: "quoted"})
	add(event.Event{Type: event.TypeAnswer, Text: "second answer"})
	add(event.Event{Type: event.TypeMessage, ID: "m-crashed", Text: "no answer"})
	var buf []byte
	for i := range events {
		buf = append(event.Append(buf, &events[i]), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), buf, 0o600); err != nil {
		t.Fatal(err)
	}
	last := int64(len(events))
	ctx := context.Background()
	for _, tc := range []struct {
		id, text string
		seq      int64
	}{
		{"m-1", "first answer", last - 3},
		{`q"é\1`, "second answer", last - 1},
	} {
		a, err := r.Message(ctx, "t", Message{ID: tc.id, Text: "again"}, nil)
		if err != nil || !a.Repeat || a.Seq != tc.seq || a.Text != tc.text {
			t.Errorf("%q again: %+v, %v; want %q at %d", tc.id, a, err, tc.text, tc.seq)
		}
	}
	// However far back.
	if a, err := r.Message(ctx, "t", Message{ID: "far", Text: "asked again, long after"}, nil); err != nil || !a.Repeat || a.Seq != 2 || a.Text != "long ago answered" {
		t.Errorf("a message id %d events back: %+v, %v", last-1, a, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl")); len(b) != len(buf) || len(m.Requests()) != 0 {
		t.Fatalf("a repeated message wrote %d bytes or asked the model %d times", len(b)-len(buf), len(m.Requests()))
	}
	// Taken and never answered, its turn goes on: the model is asked, the
	// message is not written again.
	a, err := r.Message(ctx, "t", Message{ID: "m-crashed", Text: "again"}, nil)
	if err != nil || a.Repeat || a.Seq != last+1 || len(m.Requests()) != 1 {
		t.Errorf("a message taken and not answered: %+v, %v", a, err)
	}
	if ev := readEvents(t, r, "t"); len(ev) != int(last)+1 || ev[last-1].ID != "m-crashed" || ev[last].Type != event.TypeAnswer {
		t.Errorf("%d events after the turn went on, want %d", len(ev), last+1)
	}
}

// repeatedWarm opens a conversation of n events and returns the look for
// a new message's id in it.
func repeatedWarm(tb testing.TB, n int) func() {
	dir := filepath.Join(tb.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Metrics: &metrics.Agent{Name: "ada"}, Open: openLog}
	cdir, _ := r.Agent.Path(home.Chat, "t")
	writeConversation(tb, cdir, "t", n)
	tt := &turn{r: r, c: r.caches(), thread: "t", dir: cdir}
	tb.Cleanup(tt.close)
	ctx := context.Background()
	if err := tt.open(ctx, "log"); err != nil {
		tb.Fatal(err)
	}
	if err := tt.catchUpIDs(ctx); err != nil {
		tb.Fatal(err)
	}
	m := Message{ID: "new"}
	return func() {
		if a, at, err := tt.repeated(ctx, &m); err != nil || a.Seq != 0 || at != 0 {
			tb.Fatal(a, at, err)
		}
	}
}

// The look for a message's id reads a slot of the index and decodes no
// event, so it allocates the same for any conversation.
func TestRepeatedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	const budget = 4
	if n := testing.AllocsPerRun(100, repeatedWarm(t, 1000)); n > budget {
		t.Errorf("looking for a message's id allocates %.0f times, over %d", n, budget)
	}
}

// BenchmarkRepeated is the look for a message's id that every message
// costs, in the common case: not found. It does not grow with the events.
func BenchmarkRepeated(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			run := repeatedWarm(b, n)
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}
