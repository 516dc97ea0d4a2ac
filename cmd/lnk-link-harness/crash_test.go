package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// A kill point is where in a turn the serving process is killed: when the
// child, or the model it asks, reports it is there.
const (
	atAsked    = iota // the model's request arrived
	atModelEnd        // the model's answer went out whole
	atWritten         // the harness logged the answer written
	atTold            // the harness logged the answer marked told
	atReplied         // the caller has its reply
	points
)

var pointNames = [points]string{"model asked", "model answered", "answer written", "answer marked told", "reply received"}

// What a kill hit, seen once the process is dead.
const (
	hitNoAnswer   = iota // the answer was not written
	hitNeverTold         // written and not marked told: to be handed over once
	hitToldUnsent        // marked told, its caller without it: asked again, given it
	hitAnswered          // its caller has it: never handed over
	hits
)

var hitNames = [hits]string{"no answer written", "written, never told", "told, caller without it", "caller answered"}

// crashProc is one serving process, killed and started again.
type crashProc struct {
	url   string
	cmd   *exec.Cmd
	lines lines // its standard error: debug log lines
}

// 100 SIGKILLs of a serving process at points of turns drawn from a seed,
// each when the process (or the model it asks) reports it is there; two
// processes serve one home on one SQLite (and PostgreSQL) store. Then a
// turn of every conversation finds what the dead ones left, and 8 callers
// race at _link/recover: every answer written and never told is handed
// over once, marked crashed; none twice; none its caller was given; and a
// caller that was not given a told answer gets it asking again.
func TestCrashedTurnsHandedOverOnce(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			keptBy(t, kind)
			crashTurns(t, kind, 100)
		})
	}
}

func crashTurns(t *testing.T, kind string, kills int) {
	seed := storetest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))

	dir := t.TempDir()
	script := filepath.Join(dir, "script.toml")
	os.WriteFile(script, []byte("[[rule]]\nmatch = \"any\"\ntext = \"answer to {text}\"\n"), 0o600)
	modelAddr := startModel(t, "--script", script)
	// The model is reached through this process, which so sees each request
	// come and each answer go. An answer is read whole from the model, on a
	// request of its own (a killed caller cancels nothing), then passed on.
	model := make(chan int, 1<<12)
	via := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		model <- atAsked
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		req, _ := http.NewRequest(r.Method, "http://"+modelAddr+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		model <- atModelEnd
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	t.Cleanup(via.Close)

	key := "k-e2e-0123456789abcdef0123456789"
	ada := home.Agent{Name: "ada"}
	var keyFile string
	ada.Dir, keyFile = adaHome(t, dir, `{"storage": {"conversations": "`+kind+`"}}`, key)
	h := &harness{home: ada.Dir, key: key}

	startProc := func() *crashProc {
		cmd := command(t, []string{"LNK_MODEL_PROXY=" + via.URL}, "lnk-link-harness", "serve", "--home", ada.Dir, "--listen", "127.0.0.1:0",
			"--key-file", keyFile, "--log-level", "debug")
		// Its own process group, killed whole: the store's plugin with it,
		// so that no write of the dead process's lands after the kill.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		p := &crashProc{cmd: cmd, lines: readLines(stderr)}
		p.url = "http://" + address(t, "lnk-link-harness", startOut(t, cmd))
		return p
	}
	as := func(p *crashProc) *harness { return &harness{home: h.home, key: h.key, url: p.url} }
	procs := [2]*crashProc{startProc(), startProc()}

	type kill struct {
		thread, id string
		point, hit int
		seq        int64 // the answer written, 0 when none
	}
	var done []kill
	var atCount [points]int
	var hitCount [hits]int
	for i := range kills {
		k := kill{thread: fmt.Sprintf("k%d", i), id: fmt.Sprintf("m%d", i), point: rng.IntN(points)}
		vi := rng.IntN(2)
		v, other := procs[vi], procs[1-vi]
		for len(model) > 0 { // the other process is idle: what is left is old
			<-model
		}
		type reply struct {
			s   sent
			err error
		}
		replied := make(chan reply, 1)
		go func() {
			s, err := as(v).message(k.thread, k.id, k.id)
			replied <- reply{s, err}
		}()
		// Killed when the point is reported, or when the reply comes first
		// (the turn failed, or the point's line came after it).
		var r reply
		got := false
		hang := time.After(2 * time.Minute) // a bound on a hang, never a pass
		for there := false; !there; {
			select {
			case p := <-model:
				there = p == k.point
			case l, ok := <-v.lines:
				if !ok {
					t.Fatalf("kill %d: the process's log ended", i)
				}
				there = k.point == atWritten && strings.Contains(l, `"msg":"answer written"`) && strings.Contains(l, `"thread":"`+k.thread+`"`) ||
					k.point == atTold && strings.Contains(l, `"msg":"answer marked told"`) && strings.Contains(l, `"thread":"`+k.thread+`"`)
			case r = <-replied:
				got, there = true, true
			case <-hang:
				t.Fatalf("kill %d: %s was never reported", i, pointNames[k.point])
			}
		}
		if err := syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		v.cmd.Wait()
		if !got {
			r = <-replied
		}
		atCount[k.point]++

		// What it hit, read while it is dead: the conversation through the
		// other process, what was told from the home.
		for _, e := range as(other).events(t, k.thread) {
			if e.Type == event.TypeAnswer && len(e.Calls) == 0 {
				k.seq = e.Seq
			}
		}
		dir, _ := ada.Path(home.Chat, k.thread)
		told := readToldFile(t, dir)
		switch {
		case r.err == nil:
			k.hit = hitAnswered
			if r.s.seq != k.seq || told < k.seq {
				t.Errorf("kill %d (%s): its caller was given seq %d; written %d, told %d", i, pointNames[k.point], r.s.seq, k.seq, told)
			}
		case k.seq == 0:
			k.hit = hitNoAnswer
		case told < k.seq:
			k.hit = hitNeverTold
		default:
			k.hit = hitToldUnsent
		}
		hitCount[k.hit]++
		t.Logf("kill %d: %s on %s at %s: %s (answer %d)", i, k.id, k.thread, pointNames[k.point], hitNames[k.hit], k.seq)
		done = append(done, k)
		procs[vi] = startProc()
	}
	var at, hit []string
	for p, n := range atCount {
		at = append(at, fmt.Sprintf("%s %d", pointNames[p], n))
	}
	for p, n := range hitCount {
		hit = append(hit, fmt.Sprintf("%s %d", hitNames[p], n))
	}
	t.Logf("%d kills at: %s", kills, strings.Join(at, ", "))
	t.Logf("they hit: %s", strings.Join(hit, ", "))
	if hitCount[hitNeverTold] == 0 {
		t.Errorf("no kill hit an answer written and never told: nothing was tested")
	}

	// A turn of every conversation, in either process, finds what the dead
	// left; a conversation a dead process held waits out its lease.
	var wg sync.WaitGroup
	for i, k := range done {
		p := as(procs[rng.IntN(2)])
		wg.Go(func() {
			if _, err := p.message(k.thread, fmt.Sprintf("f%d", i), "after"); err != nil {
				t.Errorf("the turn after kill %d: %v", i, err)
			}
		})
	}
	wg.Wait()

	// 8 callers race at _link/recover, then one more asks each process.
	var (
		hmu    sync.Mutex
		handed []recovered
	)
	for c := range 8 {
		wg.Go(func() {
			got := recoverAt(t, procs[c%2].url, key)
			hmu.Lock()
			handed = append(handed, got...)
			hmu.Unlock()
		})
	}
	wg.Wait()
	for _, p := range procs {
		handed = append(handed, recoverAt(t, p.url, key)...)
	}
	times := map[string]int{}
	for _, a := range handed {
		times[fmt.Sprintf("%s/%d", a.Thread, a.Seq)]++
		if !a.Crashed {
			t.Errorf("handed over %s seq %d not marked crashed", a.Thread, a.Seq)
		}
	}
	for i, k := range done {
		n := times[fmt.Sprintf("%s/%d", k.thread, k.seq)]
		delete(times, fmt.Sprintf("%s/%d", k.thread, k.seq))
		switch {
		case k.hit == hitNeverTold && n != 1:
			t.Errorf("kill %d (%s): the answer %s seq %d, never told, handed over %d times", i, pointNames[k.point], k.thread, k.seq, n)
		case k.hit != hitNeverTold && n != 0:
			t.Errorf("kill %d (%s, %s): %s seq %d handed over %d times", i, pointNames[k.point], hitNames[k.hit], k.thread, k.seq, n)
		}
		if k.hit == hitToldUnsent { // asked again, it is given the answer from the conversation
			if s, err := as(procs[rng.IntN(2)]).message(k.thread, k.id, k.id); err != nil || s.seq != k.seq {
				t.Errorf("kill %d: %s asked again: seq %d, %v; want %d", i, k.id, s.seq, err, k.seq)
			}
		}
	}
	for a, n := range times {
		t.Errorf("handed over %s, %d times, which no kill left", a, n)
	}
	t.Logf("handed over %d answers, marked crashed", len(handed))
}

// recovered is an answer as _link/recover hands it over.
type recovered struct {
	Thread  string
	Seq     int64
	Crashed bool
}

func recoverAt(t *testing.T, base, key string) []recovered {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/_link/recover", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	var out []recovered
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Errorf("recover: %s: %v", resp.Status, err)
	}
	return out
}

// readToldFile reads the highest seq told from a conversation's folder:
// 0 when none is.
func readToldFile(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "told"))
	if os.IsNotExist(err) {
		return 0
	}
	var n int64
	if _, serr := fmt.Sscan(string(b), &n); err != nil || serr != nil {
		t.Fatalf("%s/told: %q: %v %v", dir, b, err, serr)
	}
	return n
}
