package storetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// The tests below run in more than one process: the test binary starts
// itself again, running only the calling test, with these set. The child
// runs the same test function, so the same open, and takes its part where
// the parent would start children.
const (
	roleEnv = "LNK_STORETEST_ROLE" // "race 0", "race 1" or "stopped"
	dirEnv  = "LNK_STORETEST_DIR"  // the folder the parent made, shared
	turnEnv = "LNK_STORETEST_TURNS"
)

// OpenShared opens, in the parent and in each child process, the one
// conversation the processes share; dir is a folder the parent made, the
// same in every process. A store that every process must reach over the
// network (a server the test starts) is started only where IsChild is
// false, and its address handed to the children in the environment (they
// inherit it, t.Setenv included). The suite closes the conversation; the
// store it belongs to is open's to close, with t.Cleanup.
type OpenShared func(t *testing.T, dir string) store.Conversation

// IsChild says whether this process is a child that RaceTurns or
// StoppedHolder started. A test starts what only the parent should (a
// server, a cleanup that removes the store's rows) only when it is false.
func IsChild() bool { return os.Getenv(roleEnv) != "" }

// line prefixes what a child reports on its standard output, so the test
// framework's own lines are told apart.
const line = "storetest: "

// RaceTurns has two processes race turns on one conversation until it
// holds turns turns, as the harness takes them: each turn takes the lease
// (store.HoldLease), reads Last, appends a message and an answer after it,
// and lets the lease go. It checks that no two turns overlap (in time, and
// in the log: each turn's two events are next to each other), that the
// tokens strictly grow with the seqs, that both processes took turns, and
// that the conversation holds every reported turn's events and nothing
// else: none lost, none doubled.
func RaceTurns(t *testing.T, open OpenShared, turns int) {
	if role := os.Getenv(roleEnv); strings.HasPrefix(role, "race ") {
		proc, _ := strconv.Atoi(strings.TrimPrefix(role, "race "))
		n, _ := strconv.Atoi(os.Getenv(turnEnv))
		raceChild(t, open, proc, n)
		return
	} else if role != "" {
		t.Skipf("a child %q of another test", role)
	}
	dir := t.TempDir()
	const procs = 2
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := range procs {
		cmd := self(t, fmt.Sprintf("race %d", p), dir, turnEnv+"="+strconv.Itoa(turns))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	var all []raceTurn
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", p, err, tail(outs[p].Bytes()))
		}
		got, err := parseTurns(outs[p])
		if err != nil {
			t.Fatalf("process %d: %v", p, err)
		}
		if len(got) == 0 {
			t.Fatalf("process %d took no turn of %d: no race was run", p, turns)
		}
		all = append(all, got...)
	}
	if len(all) != turns {
		t.Fatalf("the processes report %d turns, want %d", len(all), turns)
	}
	// In token order the turns follow each other, in the log and in time.
	slices.SortFunc(all, func(a, b raceTurn) int { return int(a.token - b.token) })
	handovers, took := 0, [procs]int{}
	for i, tu := range all {
		took[tu.proc]++
		if want := int64(2*i + 1); tu.seq != want {
			t.Fatalf("the turn with token %d (process %d, its turn %d) wrote at seq %d, want %d: turns overlap or tokens do not grow with seqs",
				tu.token, tu.proc, tu.n, tu.seq, want)
		}
		if i == 0 {
			continue
		}
		prev := all[i-1]
		if tu.token == prev.token {
			t.Fatalf("token %d given to two turns", tu.token)
		}
		if tu.start <= prev.end {
			t.Fatalf("the turn with token %d began %v before the one with token %d ended", tu.token, time.Duration(prev.end-tu.start), prev.token)
		}
		if tu.proc != prev.proc {
			handovers++
		}
	}
	// The conversation holds every turn's two events, as its process wrote
	// them, and nothing else.
	c := open(t, dir)
	defer c.Close()
	want := int64(0)
	err := c.Read(context.Background(), 1, store.Forward, func(seq int64, ev []byte) bool {
		want++
		if seq != want {
			t.Fatalf("seq %d read after %d", seq, want-1)
		}
		tu := all[(seq-1)/2]
		if w := tu.event(seq); !bytes.Equal(ev, w) {
			t.Fatalf("seq %d holds %.200q, want %.200q", seq, ev, w)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if want != int64(2*turns) {
		t.Fatalf("the conversation holds %d events, want %d", want, 2*turns)
	}
	t.Logf("checked %d turns (%d events) raced by %d processes: %d and %d turns, %d handovers; tokens %d to %d",
		turns, 2*turns, procs, took[0], took[1], handovers, all[0].token, all[len(all)-1].token)
}

// raceTTL is the race's lease time to live, the harness's: a shorter one
// lets a holder on a busy machine under the race detector miss its
// renewals and lose the lease in the middle of a turn.
const raceTTL = store.LeaseTTL

type raceTurn struct {
	proc, n    int
	token, seq int64
	start, end int64 // wall-clock ns: the processes share one machine's clock
}

// event is the event the turn wrote at seq (its first or its second).
func (tu raceTurn) event(seq int64) []byte {
	e := event.Event{
		Seq:  seq,
		Time: time.Unix(1767225600, 0).UTC(),
		Type: event.TypeMessage,
		Text: fmt.Sprintf("process %d, turn %d, token %d", tu.proc, tu.n, tu.token),
	}
	if seq != tu.seq {
		e.Type = event.TypeAnswer
	}
	return event.Append(nil, &e)
}

func raceChild(t *testing.T, open OpenShared, proc, turns int) {
	c := open(t, os.Getenv(dirEnv))
	defer c.Close()
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for n := 0; ; n++ {
		held, release, err := store.HoldLease(ctx, c, fmt.Sprintf("race-%d", proc), raceTTL)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := held.(*store.Leased)
		if !ok {
			release()
			t.Fatal("the store keeps no leases: nothing keeps two processes' turns apart")
		}
		tu := raceTurn{proc: proc, n: n, token: l.Token(), start: time.Now().UnixNano()}
		last, err := held.Last(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if last >= int64(2*turns) {
			release()
			return
		}
		tu.seq = last + 1
		for seq := tu.seq; seq <= tu.seq+1; seq++ {
			if err := held.Append(ctx, seq, tu.event(seq)); err != nil {
				t.Fatalf("turn %d, token %d: %v", n, tu.token, err)
			}
		}
		tu.end = time.Now().UnixNano()
		release()
		fmt.Fprintf(out, "%sturn %d %d %d %d %d %d\n", line, tu.proc, tu.n, tu.token, tu.seq, tu.start, tu.end)
		// A moment between turns, as between a turn and the next message,
		// so the other process's polls find the lease free now and then:
		// the pause is part of the load under test, nothing waits on it.
		time.Sleep(rand.N(500 * time.Microsecond))
	}
}

func parseTurns(r io.Reader) ([]raceTurn, error) {
	var got []raceTurn
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s, ok := strings.CutPrefix(sc.Text(), line+"turn ")
		if !ok {
			continue
		}
		var tu raceTurn
		if _, err := fmt.Sscan(s, &tu.proc, &tu.n, &tu.token, &tu.seq, &tu.start, &tu.end); err != nil {
			return nil, fmt.Errorf("a report %q: %v", s, err)
		}
		if len(got) != tu.n {
			return nil, fmt.Errorf("turn %d reported after %d turns", tu.n, len(got))
		}
		got = append(got, tu)
	}
	return got, sc.Err()
}

// self returns the command running this test binary again, only the
// calling test, as a child in role.
func self(t *testing.T, role, dir string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(exe, "-test.run="+strings.Join(run, "/"), "-test.count=1", "-test.timeout=20m")
	cmd.Env = append(os.Environ(), append(env, roleEnv+"="+role, dirEnv+"="+dir)...)
	return cmd
}

// tail is the end of a child's output but its turns, for a failure's
// message.
func tail(b []byte) []byte {
	var keep []byte
	for l := range bytes.Lines(b) {
		if !bytes.HasPrefix(l, []byte(line+"turn ")) {
			keep = append(keep, l...)
		}
	}
	if len(keep) > 4000 {
		keep = keep[len(keep)-4000:]
	}
	return keep
}

// StoppedTTL is the time to live of the lease StoppedHolder's child holds.
const StoppedTTL = 300 * time.Millisecond

// StoppedHolder has a child process hold the conversation's lease
// (store.HoldLease, time to live StoppedTTL) and append under it, stops it
// (SIGSTOP) past its time to live while this process takes the lease over
// and appends, then continues it (SIGCONT) and has it try to append again,
// both through its held conversation (which its own clock should refuse)
// and with its token straight to the store (which the store must refuse).
// None of those appends may be accepted: the conversation holds the child's
// appends from before the stop, the new holder's, and nothing else.
//
// idle, when not nil, says whether the stopped process pid holds nothing of
// the store that others would wait for: a store whose writes lock
// something (a file, a row) for their transaction cannot be taken over
// from a process stopped inside one, so the child is continued and stopped
// again until it is stopped outside. A stopped process still holding a lock
// keeps others waiting, by the store's design; fencing cannot help there.
func StoppedHolder(t *testing.T, open OpenShared, idle func(t *testing.T, dir string, pid int) bool) {
	if role := os.Getenv(roleEnv); role == "stopped" {
		stoppedChild(t, open)
		return
	} else if role != "" {
		t.Skipf("a child %q of another test", role)
	}
	dir := t.TempDir()
	p := startStopped(t, dir)
	const before = 3
	p.appendsUnderLease(t, before)
	stops := p.stopIdle(t, dir, idle)
	stopped := time.Now()

	c := open(t, dir)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	held, token, release := takeOver(t, ctx, c, p.token, stopped)
	defer release()
	if err := held.Append(ctx, before+1, successorEvent(before+1)); err != nil {
		t.Fatalf("the successor's append: %v", err)
	}
	refused := p.triesRefused(t, 20)
	p.quit(t)
	if err := held.Append(ctx, before+2, successorEvent(before+2)); err != nil {
		t.Fatalf("the successor's append after the child's tries: %v", err)
	}
	n := checkStopped(t, ctx, c, p.token, before, 2)
	t.Logf("stopped %d time(s) to find the child outside a write; lease taken %v after the stop (time to live %v), token %d after %d; "+
		"the continued holder's appends refused: %d by its own clock, %d by the store; %d events checked",
		stops, time.Since(stopped).Round(time.Millisecond), StoppedTTL, token, p.token, refused["append"], refused["raw"], n)
}

// stoppedProc is StoppedHolder's child, as the parent sees it: asked on
// its standard input, answering on its standard output.
type stoppedProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies *bufio.Scanner
	stderr  bytes.Buffer
	token   int64 // its lease's
}

// startStopped starts the child on dir and waits for it to hold its lease.
// The child is continued and killed when t ends.
func startStopped(t *testing.T, dir string) *stoppedProc {
	t.Helper()
	p := &stoppedProc{cmd: self(t, "stopped", dir)}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	p.replies = bufio.NewScanner(stdout)
	verdict, token := p.ask(t, "")
	if verdict != "held" {
		t.Fatalf("the child reports %q, want its lease", verdict)
	}
	p.token = token
	return p
}

// ask asks the child to do what ("" to ask nothing) and returns its
// report: the verdict and a seq (or its token).
func (p *stoppedProc) ask(t *testing.T, what string) (verdict string, seq int64) {
	t.Helper()
	if what != "" {
		if _, err := io.WriteString(p.stdin, what+"\n"); err != nil {
			t.Fatalf("ask the child to %s: %v", what, err)
		}
	}
	for p.replies.Scan() {
		s, ok := strings.CutPrefix(p.replies.Text(), line)
		if !ok {
			continue
		}
		var kind string
		if _, err := fmt.Sscan(s, &kind, &verdict, &seq); err != nil {
			t.Fatalf("the child's report %q: %v", s, err)
		}
		if kind != what && what != "" {
			t.Fatalf("asked to %s, the child reports %q", what, s)
		}
		if verdict == "error" {
			t.Fatalf("the child: %s", s)
		}
		return verdict, seq
	}
	t.Fatalf("the child ended: %v\n%s", p.replies.Err(), p.stderr.Bytes())
	return "", 0
}

// appendsUnderLease has the child append seqs 1 to n under its lease.
func (p *stoppedProc) appendsUnderLease(t *testing.T, n int64) {
	t.Helper()
	for i := int64(1); i <= n; i++ {
		if v, seq := p.ask(t, "append"); v != "ok" || seq != i {
			t.Fatalf("the child's append %d under its lease: %s at seq %d", i, v, seq)
		}
	}
}

// stopIdle stops the child where it holds nothing others wait for, as
// idle says, and returns how many stops that took. Between two stops the
// child is continued and answers a ping, so it has run again: the next
// stop finds it elsewhere.
func (p *stoppedProc) stopIdle(t *testing.T, dir string, idle func(t *testing.T, dir string, pid int) bool) (stops int) {
	t.Helper()
	pid := p.cmd.Process.Pid
	for {
		stops++
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, pid)
		if idle == nil || idle(t, dir, pid) {
			return stops
		}
		if stops == 1000 {
			t.Fatalf("the child was inside a write at each of %d stops", stops)
		}
		p.cmd.Process.Signal(syscall.SIGCONT)
		if v, _ := p.ask(t, "ping"); v != "ok" {
			t.Fatalf("the child's answer to a ping: %s", v)
		}
	}
}

// takeOver takes the lease of the child stopped at stopped through c, and
// checks it was not taken before the child's time to live ran out and that
// its token is past the child's, token.
func takeOver(t *testing.T, ctx context.Context, c store.Conversation, token int64, stopped time.Time) (held store.Conversation, successor int64, release func()) {
	t.Helper()
	held, release, err := store.HoldLease(ctx, c, "successor", StoppedTTL)
	if err != nil {
		t.Fatalf("taking the stopped holder's lease: %v", err)
	}
	waited := time.Since(stopped)
	l, ok := held.(*store.Leased)
	if !ok {
		release()
		t.Fatal("the store keeps no leases")
	}
	if waited < StoppedTTL {
		release()
		t.Fatalf("the lease was taken %v after its holder stopped, before its time to live %v", waited, StoppedTTL)
	}
	if l.Token() <= token {
		release()
		t.Fatalf("the successor's token %d is not past the stopped holder's %d", l.Token(), token)
	}
	return held, l.Token(), release
}

// triesRefused continues the child and has it try tries appends through
// its held conversation and tries straight to the store, each of which
// must be refused as a stale lease; it returns how many of each were.
func (p *stoppedProc) triesRefused(t *testing.T, tries int) map[string]int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	refused := map[string]int{}
	for i := range 2 * tries {
		what := [2]string{"append", "raw"}[i%2]
		v, seq := p.ask(t, what)
		if v != "stale" {
			t.Fatalf("the continued child's %s at seq %d: %s, want refused as a stale lease", what, seq, v)
		}
		refused[what]++
	}
	return refused
}

// quit has the child let its lease go and end, and waits for it.
func (p *stoppedProc) quit(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, "quit\n"); err != nil {
		t.Fatal(err)
	}
	p.stdin.Close()
	for p.replies.Scan() {
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("the child: %v\n%s", err, p.stderr.Bytes())
	}
}

// checkStopped checks c holds the stopped holder's before events (its
// token token) and then the successor's after, and nothing else, and
// returns how many events it read.
func checkStopped(t *testing.T, ctx context.Context, c store.Conversation, token, before, after int64) int {
	t.Helper()
	var seqs []int64
	err := c.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		seqs = append(seqs, seq)
		want := successorEvent(seq)
		if seq <= before {
			want = stoppedEvent(token, seq)
		}
		if !bytes.Equal(ev, want) {
			t.Errorf("seq %d holds %.200q, want %.200q", seq, ev, want)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for seq := int64(1); seq <= before+after; seq++ {
		want = append(want, seq)
	}
	if !slices.Equal(seqs, want) {
		t.Fatalf("the conversation holds seqs %v, want the child's 1-%d and the successor's %d-%d", seqs, before, before+1, before+after)
	}
	return len(seqs)
}

// waitStopped waits until pid, a child of this process, is stopped, as the
// kernel reports it to wait4 (WUNTRACED).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("waiting for process %d to stop: %v", pid, err)
		}
		break
	}
	if !ws.Stopped() {
		t.Fatalf("process %d ended (%v) where it was to stop", pid, ws)
	}
}

func stoppedEvent(token, seq int64) []byte {
	e := event.Event{Seq: seq, Time: time.Unix(1767225600, 0).UTC(), Type: event.TypeMessage, Text: fmt.Sprintf("the first holder, token %d", token)}
	return event.Append(nil, &e)
}

func successorEvent(seq int64) []byte {
	e := event.Event{Seq: seq, Time: time.Unix(1767225600, 0).UTC(), Type: event.TypeAnswer, Text: "the successor"}
	return event.Append(nil, &e)
}

// stoppedChild holds the lease and appends when asked on its standard
// input: "append" through the held conversation, "raw" with its token
// straight to the store, "ping" to answer only, "quit" to let the lease go
// and end. It reports each on its standard output: the verdict ok, stale
// or error, and the seq.
func stoppedChild(t *testing.T, open OpenShared) {
	c := open(t, os.Getenv(dirEnv))
	defer c.Close()
	ctx := context.Background()
	held, release, err := store.HoldLease(ctx, c, "stopped", StoppedTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	l, ok := held.(*store.Leased)
	if !ok {
		t.Fatal("the store keeps no leases")
	}
	raw := c.(store.Leaser) // HoldLease found it so
	fmt.Printf("%slease held %d\n", line, l.Token())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		what := sc.Text()
		switch what {
		case "quit":
			return
		case "ping":
			fmt.Printf("%sping ok 0\n", line)
			continue
		}
		seq, err := held.Last(ctx)
		if err == nil {
			seq++
			ev := stoppedEvent(l.Token(), seq)
			switch what {
			case "append":
				err = held.Append(ctx, seq, ev)
			case "raw":
				err = raw.AppendLeased(ctx, seq, ev, l.Token())
			default:
				err = fmt.Errorf("asked %q", what)
			}
		}
		switch {
		case err == nil:
			fmt.Printf("%s%s ok %d\n", line, what, seq)
		case errors.Is(err, store.ErrStaleLease):
			fmt.Printf("%s%s stale %d %v\n", line, what, seq, err)
		default:
			fmt.Printf("%s%s error %d %v\n", line, what, seq, err)
		}
	}
}

// FullRace is how many turns the issue asks two processes to race.
const FullRace = 10000

// RaceLength is how many turns a store's test races: FullRace in CI
// (CI=true), the number in LNK_RACE_TURNS when it is set, else a tenth of
// FullRace, which keeps a package's tests near a minute on a busy machine.
func RaceLength() int {
	if n, err := strconv.Atoi(os.Getenv("LNK_RACE_TURNS")); err == nil && n > 0 {
		return n
	}
	if os.Getenv("CI") == "true" {
		return FullRace
	}
	return FullRace / 10
}
