package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/scripted"
)

// What a turn waiting on its model holds of the stack. Its one goroutine,
// from the connection's serve down to the read of the model's stream, is
// most of what a turn in flight costs besides its heap: a model streams
// for seconds, and the turn waits there, deeper than for the answer's
// header. A goroutine's stack is a power of two that fits the deepest it
// went, and shrinks only when under a quarter of it is in use; new
// goroutines start at the average in use, rounded up to a power of two.
// So a turn that waits in under stackWaitBudget, and went no deeper than
// stackBudget before, holds a stack of stackBudget, and a process of
// waiting turns starts its goroutines there too. The frames are the
// program's as built; the harness runs in a process of its own, and a
// SIGQUIT with GOTRACEBACK=system has it print each frame's stack
// pointers.
//
// The process runs with GODEBUG=adaptivestackstart=0: its goroutines
// start at 2 KiB and hold what their frames grew them to. Started at the
// average, a goroutine that ends keeps its stack for the next one, so
// each turn's dial of the model (on a goroutine of its own, package
// apart) left 8 KiB the stacks' total counts beside the turn's own, and
// the total read 12.5-22.8 KiB a waiting turn from run to run; without,
// 10.2-13.3 KiB, and 17.7-18.7 KiB with the dial on the turn's stack.
func TestWaitingTurnStack(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the frames' budget is of amd64, not %s", runtime.GOARCH)
	}
	const n = 128
	model := scripted.New(&scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "ok"}}})
	asked, gate := make(chan struct{}, n), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The answer's header and first event sent, the turn that asked
		// reads them and waits for the rest: the deepest it waits.
		model.ServeHTTP(&gated{ResponseWriter: w, asked: asked, gate: gate}, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(gate) })

	const key = "k-stack-0123456789abcdef0123456789"
	home, keyFile := adaHome(t, t.TempDir(), "", key)
	var log bytes.Buffer
	cmd, addr := startLogged(t, []string{"LNK_MODEL_PROXY=" + srv.URL, "GOTRACEBACK=system", "GODEBUG=adaptivestackstart=0"}, &log,
		"lnk-link-harness", "serve", "--home", home, "--listen", "127.0.0.1:0", "--key-file", keyFile)
	stacks := func() float64 {
		t.Helper()
		code, page, err := fleettest.Do(http.DefaultClient, http.MethodGet, "http://"+addr+"/metrics", key, "")
		if err != nil || code != http.StatusOK {
			t.Fatalf("/metrics: %d %v", code, err)
		}
		m, err := drive.ParseMetrics(strings.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := m.Value("go_memory_stacks_bytes")
		return v
	}

	before := stacks()
	// Each message on a connection written by hand.
	for i := range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		body := fmt.Sprintf(`{"id":"m%d","text":"hello"}`, i)
		fmt.Fprintf(nc, "POST /v1/agents/ada/chats/t%d/messages HTTP/1.1\r\nHost: ada\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
			i, key, len(body), body)
	}
	for range n {
		<-asked
	}
	per := (stacks() - before) / n

	cmd.Process.Signal(syscall.SIGQUIT)
	cmd.Wait()
	w, ok := waitingTurn(log.String())
	if !ok {
		t.Fatalf("no turn waiting on its model's stream in the traceback:\n%s", log.String())
	}
	t.Logf("a turn waiting on its model's stream: %d bytes of its stack in use; the stacks grew %.0f bytes a turn (%d turns)\n%s", w.used, per, n, w.frames)
	if w.used > stackWaitBudget {
		t.Errorf("a turn waiting on its model's stream uses %d bytes of its stack, over %d", w.used, stackWaitBudget)
	}
	// A stack is a power of two: a turn past the budget holds twice it on
	// its own, so the stacks grow by that at the least. Below it is what
	// the runtime keeps, until a collection, of stacks freed: those of the
	// goroutines each turn's dial of the model ran on (package apart),
	// 1.5-5.5 KiB a turn here, 7.9 in one CI beside two busy loops.
	if per >= 2*stackBudget {
		t.Errorf("the stacks grew %.0f bytes a waiting turn: a turn's stack past %d", per, stackBudget)
	}
}

// The stack a turn waiting on its model's stream may use, and the stack
// it may have grown to (TestWaitingTurnStack). What runs below a frame
// at the wait, an allocation's slow path that sweeps a span, takes up to
// about a KiB more, and a stack grows once past its size less its guard
// (928 bytes): a wait of 7 KiB grew every turn to 16.
const (
	stackWaitBudget = 6 << 10
	stackBudget     = 8 << 10
)

// waiting is the stack of a goroutine: the bytes in use, from its lowest
// stack pointer to its highest frame pointer, and each frame's size and
// function, a line each.
type waiting struct {
	used   int
	frames string
}

var framePointers = regexp.MustCompile(`fp=0x([0-9a-f]+) sp=0x([0-9a-f]+)`)

// waitingTurn finds, in a traceback printed with GOTRACEBACK=system, a
// goroutine parked reading the model's stream, and reads its stack.
func waitingTurn(traceback string) (waiting, bool) {
	for _, g := range strings.Split(traceback, "\n\n") {
		if !strings.Contains(g, "model.readStream") || !strings.Contains(g, "runtime.gopark") {
			continue
		}
		var w waiting
		var b strings.Builder
		lo, hi := uint64(1<<64-1), uint64(0)
		lines := strings.Split(g, "\n")
		for i := 1; i < len(lines); i++ {
			m := framePointers.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			fp, _ := strconv.ParseUint(m[1], 16, 64)
			sp, _ := strconv.ParseUint(m[2], 16, 64)
			lo, hi = min(lo, sp), max(hi, fp)
			name, _, _ := strings.Cut(strings.TrimSpace(lines[i-1]), "(0x")
			fmt.Fprintf(&b, "%6d %s\n", fp-sp, strings.TrimSuffix(name, "(...)"))
		}
		if hi == 0 {
			continue
		}
		w.used, w.frames = int(hi-lo), b.String()
		return w, true
	}
	return waiting{}, false
}

// gated is a model's answer held after its first flush (the header and
// the first event) until gate closes; asked is told when it is held.
type gated struct {
	http.ResponseWriter
	asked   chan<- struct{}
	gate    <-chan struct{}
	flushed bool
}

func (g *gated) Flush() {
	g.ResponseWriter.(http.Flusher).Flush()
	if !g.flushed {
		g.flushed = true
		g.asked <- struct{}{}
		<-g.gate
	}
}
