package turn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// warmScript answers a long conversation: a summary when asked for one,
// a call of web__echo when a message asks to look something up, else a
// few hundred bytes.
var warmScript = &scripted.Script{Seed: 7, Cache: true, Rules: []scripted.Rule{
	{Match: askWords, AnswerBytes: 600, AnswerBytesMax: 1200},
	{Match: "look it up", Results: "no", Calls: []scripted.Call{{Name: "web__echo", Args: `{"text":"the plans"}`}}},
	{Match: "any", AnswerBytes: 100, AnswerBytesMax: 700},
}}

// interloper is the turn before which another Runner on the same home
// (another process, as the folder's lock sees it) takes a turn of the
// conversation.
const interloper = 57

// warmRun is one run of a long conversation: every request the model was
// sent, turn by turn, and the bytes each turn read from the store.
type warmRun struct {
	requests [][][]byte
	read     []int64
}

// runConversation takes n turns of one conversation in a fresh home at
// dir, with a Warm or without, another Runner taking a turn before turn
// interloper, each Runner's clock a minute a call from the same start.
func runConversation(t *testing.T, dir, modelName string, n int, withWarm bool, web string) warmRun {
	// web "" offers no tools: the calls the model makes anyway are
	// answered as calls of no tool, and every request writes them as text.
	t.Helper()
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := settings.Defaults()
	s.Model.Name = modelName
	s.Window.Max, s.Window.MaxSet = 4000, true
	if err := settings.Write(filepath.Join(dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	clock := func() func() time.Time {
		at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
		return func() time.Time { at = at.Add(time.Minute); return at }
	}
	newRunner := func(w *warm.Cache) *Runner {
		a := home.Agent{Name: "ada", Dir: dir}
		r := &Runner{Agent: a, HTTP: &http.Client{}, Metrics: &metrics.Agent{Name: "ada"}, Open: openLog, Now: clock(), Process: Process{Warm: w}}
		if web != "" {
			r.Tools = tools.New(a, []tools.Server{{Name: "web", URL: web}}, tools.Options{})
			t.Cleanup(func() { r.Tools.Close() })
		}
		return r
	}
	var w *warm.Cache
	if withWarm {
		w = &warm.Cache{}
	}
	r, other := newRunner(w), newRunner(nil)
	t.Cleanup(w.Release)
	rec := recordRequests(t, r, warmScript)
	other.Getenv = r.Getenv
	ctx := context.Background()
	var run warmRun
	for i := 1; i <= n; i++ {
		if i == interloper {
			if _, err := other.Message(ctx, "long", Message{ID: "other", Text: "a word from another process"}, nil); err != nil {
				t.Fatal(err)
			}
			run.requests = append(run.requests, rec.take())
			run.read = append(run.read, 0)
		}
		text := fmt.Sprintf("message %d: %s", i, strings.Repeat("about the plans for the day ", 3+i%7))
		if i%5 == 0 {
			text += " Please look it up."
		}
		before := r.Metrics.BytesRead()
		if _, err := r.Message(ctx, "long", Message{ID: fmt.Sprint(i), Text: text}, nil); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		run.requests = append(run.requests, rec.take())
		run.read = append(run.read, r.Metrics.BytesRead()-before)
	}
	return run
}

// Over hundreds of turns of one conversation in a small window, crossing
// drop points and summaries, with tool calls and another process's turn in
// between, the requests the model is sent with the warm cache on are the
// bytes of a fresh composition (no Warm: every turn reads, composes and
// encodes all of it), turn after turn, in each provider's format. A turn
// with the cache reads little of the store; the turn after another
// process's reads its window afresh.
func TestWarmSameRequests(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 80
	}
	url, _ := webServer(t)
	for _, modelName := range []string{"anthropic/claude-opus-5-5", "openai/gpt-6-luna", "openrouter/anthropic-claude", "ollama/qwen3:8b"} {
		for _, web := range []string{url, ""} {
			provider, _, _ := strings.Cut(modelName, "/")
			name := provider + "/tools"
			if web == "" {
				name = provider + "/no-tools"
			}
			t.Run(name, func(t *testing.T) { sameRequests(t, modelName, n, web) })
		}
	}
}

// sameRequests runs the conversation fresh and warm and compares.
func sameRequests(t *testing.T, modelName string, n int, web string) {
	dir := filepath.Join(t.TempDir(), "ada") // the same path both times: the prompt names it
	fresh := runConversation(t, dir, modelName, n, false, web)
	warm := runConversation(t, dir, modelName, n, true, web)
	if len(fresh.requests) != len(warm.requests) {
		t.Fatalf("%d turns fresh, %d warm", len(fresh.requests), len(warm.requests))
	}
	sums := 0
	for i := range fresh.requests {
		f, w := fresh.requests[i], warm.requests[i]
		if len(f) != len(w) {
			t.Fatalf("turn %d: %d requests fresh, %d warm", i+1, len(f), len(w))
		}
		for j := range f {
			if !bytes.Equal(f[j], w[j]) {
				k := commonPrefix(f[j], w[j])
				t.Fatalf("turn %d, request %d: warm differs at byte %d of %d:\nfresh …%s\n warm …%s", i+1, j+1, k, len(f[j]),
					f[j][max(0, k-80):min(len(f[j]), k+80)], w[j][max(0, k-80):min(len(w[j]), k+80)])
			}
			if bytes.Contains(f[j], []byte(askWords)) {
				sums++
			}
		}
	}
	if sums == 0 {
		t.Fatal("no summary: the conversation crossed no drop point")
	}
	ev := events(t, &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Open: openLog}, "long")
	results := 0
	for _, e := range ev {
		if e.Type == event.TypeResult {
			results++
		}
	}
	if results == 0 {
		t.Fatal("no tool was called")
	}
	// The store read: the first turn's window afresh, then nothing
	// but by the turn after the other process's, which reads its
	// window again, as fresh composition reads it every turn (the
	// answers' latencies, kept in them, make the bytes differ a
	// little from run to run).
	after := interloper // the turn after the other's
	most := int64(0)
	for i, n := range warm.read[1:] {
		if i+1 != after {
			most = max(most, n)
		}
	}
	if most != 0 || warm.read[after] < fresh.read[after]/2 {
		t.Errorf("bytes read: %d by the turn after the other process's (%d fresh), at most %d by the other warm turns", warm.read[after], fresh.read[after], most)
	}
	t.Logf("%d turns, %d summaries asked, %d tool results: the same bytes; a warm turn read at most %d bytes, the turn after another process's %d", n, sums, results, most, warm.read[after])
}

// writeWindow writes n events of one window, messages and answers in
// turn, about 150 bytes of text each, every answer's window starting at
// the first event: a conversation of n messages, all of them sent.
func writeWindow(tb testing.TB, dir, thread string, n int) {
	tb.Helper()
	hometest.WriteLog(tb, dir, thread, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), n, hometest.Window("[Thu 2026-01-01 00:00 UTC · bench · Ada, your owner]", 8))
}

// windowRunner is a Runner of a fresh agent reading env, with w its Warm
// (none when nil), whose conversation thread holds n events of one window
// (writeWindow's).
func windowRunner(tb testing.TB, env map[string]string, w *warm.Cache, thread string, n int) *Runner {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "ada")
	os.Mkdir(dir, 0o700)
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return env[k] }, HTTP: &http.Client{}, Open: openLog, Process: Process{Warm: w}}
	chat, _ := r.Agent.Path(home.Chat, thread)
	if n > 0 {
		writeWindow(tb, chat, thread, n)
	}
	return r
}

// BenchmarkWarmTurn is one whole turn in process, the scripted model
// called over loopback HTTP, in a conversation whose window holds every
// message: a new one (window=0) and one of 800 messages (window=800), each
// growing by two events a turn, with the Warm and without (every turn
// reads, decodes, composes and encodes its whole window). Run a fixed
// count, so the windows are those named:
//
//	go test -run '^$' -bench WarmTurn -benchtime 50x -count 5 ./harness/turn
func BenchmarkWarmTurn(b *testing.B) {
	_, proxy := hometest.Model(b, nil)
	env := map[string]string{"LNK_MODEL_PROXY": proxy}
	for _, n := range []int{0, 800} {
		for _, withWarm := range []bool{false, true} {
			b.Run(fmt.Sprintf("window=%d/warm=%v", n, withWarm), func(b *testing.B) {
				var w *warm.Cache
				if withWarm {
					w = &warm.Cache{}
					defer w.Release()
				}
				r := windowRunner(b, env, w, "bench", n)
				ctx := context.Background()
				// One turn first: the id index and the copy for people made.
				if _, err := r.Message(ctx, "bench", Message{ID: "first", Text: "hello"}, nil); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if _, err := r.Message(ctx, "bench", Message{ID: fmt.Sprint(i), Text: fmt.Sprintf("message %d: how are you today?", i)}, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A warm turn allocates about as much with 800 messages in its window as
// with a few: nothing of the window is decoded, made or encoded again.
// (The count holds the scripted model's own, in this process, and HTTP's:
// the same in both.)
func TestWarmTurnAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	_, proxy := hometest.Model(t, nil)
	env := map[string]string{"LNK_MODEL_PROXY": proxy}
	allocs := func(n int) float64 {
		w := &warm.Cache{}
		defer w.Release()
		r := windowRunner(t, env, w, "t", n)
		i := 0
		send := func() {
			i++
			if _, err := r.Message(context.Background(), "t", Message{ID: fmt.Sprint(i), Text: fmt.Sprintf("message %d: how are you today?", i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		send()
		return testing.AllocsPerRun(20, send)
	}
	small, large := allocs(0), allocs(800)
	t.Logf("allocations of a warm turn: %.0f with a new conversation, %.0f with 800 messages in its window", small, large)
	if large > small+60 || large > 600 {
		t.Errorf("a warm turn with 800 messages in its window allocates %.0f times, %.0f with a few: want at most 60 more, and 600", large, small)
	}
}

// A conversation's folder replaced between two turns (removed, and a
// conversation of as many events written in its place) is read afresh:
// the kept one, its file gone, is never appended to.
func TestWarmFolderReplaced(t *testing.T) {
	r, m := newRunner(t, nil)
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{ID: "1", Text: "the first words"}, nil); err != nil {
		t.Fatal(err)
	}
	chat, _ := r.Agent.Path(home.Chat, "t")
	if err := os.RemoveAll(chat); err != nil {
		t.Fatal(err)
	}
	writeWindow(t, chat, "t", 2) // as many events as the turn left
	if _, err := r.Message(ctx, "t", Message{ID: "2", Text: "the next words"}, nil); err != nil {
		t.Fatal(err)
	}
	req := lastRequest(t, m)
	if strings.Contains(req, "the first words") || !strings.Contains(req, "how are you today?") {
		t.Errorf("the request after the folder was replaced: %s", req)
	}
	ev := events(t, r, "t")
	if len(ev) != 4 || ev[2].Text != "the next words" {
		t.Errorf("the conversation in the new folder: %d events", len(ev))
	}
}

// A warm conversation keeps its files open between turns (its folder, its
// id index, its copy for people, its told file), the folder unlocked; a
// copy a person replaced or wrote to is made again whole rather than
// written through the file kept; and an agent that rests holds none.
func TestWarmKeepsFiles(t *testing.T) {
	r, _ := newRunner(t, nil)
	r.Untold = func(string, Answer) {}
	ctx := context.Background()
	send := func(id string) Answer {
		t.Helper()
		a, err := r.Message(ctx, "t", Message{ID: id, Text: "words " + id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Seq != 0 && !a.Repeat {
			if err := r.MarkTold("t", a.Seq); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	chat, _ := r.Agent.Path(home.Chat, "t")
	copyPath, _ := r.Agent.Path(home.ChatCopy, "t")
	copyIsWhole := func(when string) {
		t.Helper()
		want := madeCopy(t, r, "t")
		if got, _ := os.ReadFile(copyPath); string(got) != want {
			t.Errorf("%s: the copy for people is\n%s\nwant\n%s", when, got, want)
		}
	}
	// The files kept open with the conversation, as the process holds them;
	// a conversation this small has no id index file (OpenIndexDeferred).
	kept := []string{chat, copyPath, filepath.Join(chat, idempotency.ToldName)}

	// A first turn makes the told record and keeps it open: its answer's
	// marking writes through it, not opening it again by path.
	first := send("1")
	if open := heldOpen(t, kept[2]); !open[0] {
		t.Fatal("the told record a first turn made is not kept open")
	}
	if told, _, err := idempotency.ReadToldFile(kept[2]); err != nil || told != first.Seq {
		t.Fatalf("after the first answer's marking the told record says %d (%v), want %d", told, err, first.Seq)
	}
	send("2")
	before := r.Metrics.BytesRead()
	send("2b")
	if read := r.Metrics.BytesRead() - before; read != 0 {
		t.Fatalf("a turn that changed nothing in the folder read %d bytes: it left its conversation to be composed afresh", read)
	}
	if open := heldOpen(t, kept...); !open[0] || !open[1] || !open[2] {
		t.Fatalf("kept open: folder %v, copy %v, told %v; want all", open[0], open[1], open[2])
	}
	if _, err := os.Stat(filepath.Join(chat, idempotency.IndexFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a conversation of a few events has an id index file: %v", err)
	}
	// The folder kept open holds no lock between turns: another process's
	// turn may take it.
	fd, err := unix.Open(chat, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("the folder is locked between turns: %v", err)
	}
	unix.Close(fd)
	copyIsWhole("after two turns")

	// Replaced by a person: the file kept is not the file at the path.
	tmp := copyPath + ".mine"
	os.WriteFile(tmp, []byte("my own notes\n"), 0o600)
	if err := os.Rename(tmp, copyPath); err != nil {
		t.Fatal(err)
	}
	send("3")
	copyIsWhole("after the copy was replaced")
	send("4")
	if !heldOpen(t, copyPath)[0] {
		t.Fatal("the copy is not kept open again")
	}
	// Written to in place, the folder as it was: the size left is not the
	// size.
	f, err := os.OpenFile(copyPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat("a long line of mine, ", 500) + "\n")
	f.Close()
	send("5")
	copyIsWhole("after the copy was written to")

	// The ids kept in memory find a message again; and a turn that reads
	// them afresh from the events (TestIDsOfASmallConversation).
	if a := send("2"); !a.Repeat {
		t.Errorf("message 2 sent again: %+v, want its answer told again", a)
	}
	ev := events(t, r, "t")
	r.Warm.Release() // the next turn reads the ids from the events
	if a := send("3"); !a.Repeat {
		t.Errorf("message 3 sent again after the warm conversation was let go of: %+v, want its answer told again", a)
	}
	if n := len(events(t, r, "t")); n != len(ev) {
		t.Errorf("%d events after two messages sent again; want %d", n, len(ev))
	}
	send("6")
	if n, _ := r.Warm.Len(); n != 1 {
		t.Fatal("the conversation is not kept")
	}
	r.Rest()
	open := heldOpen(t, kept...)
	if n, _ := r.Warm.Len(); n != 0 || open[0] || open[1] || open[2] {
		t.Errorf("after Rest: %d kept, folder %v, copy %v, told %v open; want nothing", n, open[0], open[1], open[2])
	}
}

// heldOpen says, of each of paths, whether the process holds it open:
// one of its descriptors names it.
func heldOpen(t *testing.T, paths ...string) []bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil {
			open[p] = true
		}
	}
	out := make([]bool, len(paths))
	for i, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		out[i] = open[p]
	}
	return out
}
