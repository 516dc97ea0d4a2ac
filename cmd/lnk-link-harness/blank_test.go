package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/fleet"
	"lnk.dev/linkharness/harness/fleet/fleettest"
)

// blankUnit is a blank unit started ahead: its control socket, and its
// output and log as lines.
type blankUnit struct {
	cmd      *exec.Cmd
	control  string
	out, log lines
}

// startBlank starts serve --blank with extra flags, the model proxy at
// modelAddr, and waits for it to say it is blank.
func startBlank(t *testing.T, dir, modelAddr string, extra ...string) *blankUnit {
	t.Helper()
	control := filepath.Join(dir, "control")
	cmd, out, log := startWatched(t, []string{"LNK_MODEL_PROXY=http://" + modelAddr, "LNK_HOME=" + dir}, append([]string{"serve", "--blank", control}, extra...)...)
	u := &blankUnit{cmd: cmd, control: control, out: out, log: log}
	u.out.wait(t, "the blank line", "blank on "+control)
	return u
}

// bindAnswer is the control line's answer as API.md has it: {ok, listen}
// or {error}.
type bindAnswer struct {
	OK     bool   `json:"ok"`
	Listen string `json:"listen"`
	Error  string `json:"error"`
}

// bind sends line on the unit's control socket and returns its answer.
func (u *blankUnit) bind(t *testing.T, line string) bindAnswer {
	t.Helper()
	c, err := net.Dial("unix", u.control)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Written beside the read: a line over the limit is answered before
	// it is all read.
	go io.WriteString(c, line+"\n")
	b, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer to the bind: %v", err)
	}
	var a bindAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("the answer %q: %v", b, err)
	}
	return a
}

// bindLineOf is a control line binding name's home under dir with key.
func bindLineOf(name, homeDir, key string, settings string) string {
	b, _ := json.Marshal(map[string]any{"agent": name, "home": homeDir, "key": key, "settings": json.RawMessage(settings)})
	return string(b)
}

// ask sends one message to name at addr with key, and returns the status
// and body.
func ask(t *testing.T, addr, name, key, text string) (int, string) {
	t.Helper()
	code, body, err := fleettest.Post(oneShot, "http://"+addr, name, key, "t", `{"text":`+fmt.Sprintf("%q", text)+`}`)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// A blank unit refuses what cannot bind it and stays blank: a home that
// is not there, a line that is not the control line's object, one over
// the limit, a short key, unknown keys, bad settings. Then one line binds
// it: it answers with its address at once, answers its first message as
// the agent with the settings it was bound with (held in memory: the
// home's config.json names a model no proxy serves), refuses a second
// bind saying why, and ends once its agent sleeps.
func TestBlankUnit(t *testing.T) {
	dir := t.TempDir()
	modelAddr := startModel(t)
	ada := filepath.Join(dir, "ada")
	os.Mkdir(ada, 0o700)
	// Read from the home, this would refuse every turn.
	os.WriteFile(filepath.Join(ada, "config.json"), []byte(`{"model":{"name":"openai/gpt-x"}}`), 0o600)
	const key = "made-for-this-binding-0123456789"
	settings := `{"model":{"name":"anthropic/claude-test"}}`
	// Long enough that the checks after the first answer come before the
	// agent sleeps however loaded the machine; the end is waited for on
	// the log, never timed.
	u := startBlank(t, dir, modelAddr, "--sleep-after", "3s")

	for _, c := range []struct{ what, line, want string }{
		{"no such home", bindLineOf("ada", filepath.Join(dir, "nobody"), key, settings), "is not a folder"},
		{"not JSON", "bind ada please", "not one JSON object"},
		{"two objects", bindLineOf("ada", ada, key, settings) + " {}", "more than one JSON object"},
		{"unknown key", `{"home":"` + ada + `","key":"` + key + `","port":1}`, "unknown field"},
		{"short key", bindLineOf("ada", ada, "short", settings), "16 bytes at least"},
		{"no home", `{"key":"` + key + `"}`, "no home"},
		{"bad settings", bindLineOf("ada", ada, key, `{"model":{"name":"nomaker"}}`), "not maker/model"},
		{"bad name", bindLineOf("../x", ada, key, settings), "agent name"},
		{"over the limit", `{"home":"` + strings.Repeat("x", fleet.MaxBindLine) + `"}`, fmt.Sprintf("over %d bytes", fleet.MaxBindLine)},
	} {
		a := u.bind(t, c.line)
		if a.OK || a.Listen != "" || !strings.Contains(a.Error, c.want) {
			t.Errorf("%s: answered %+v, want an error saying %q", c.what, a, c.want)
		}
	}

	a := u.bind(t, bindLineOf("ada", ada, key, settings))
	if !a.OK || a.Listen == "" || a.Error != "" {
		t.Fatalf("the bind answered %+v", a)
	}
	if got := u.out.wait(t, "the listening line", "listening on "); got != "listening on "+a.Listen {
		t.Errorf("printed %q, answered %s", got, a.Listen)
	}
	if code, body := ask(t, a.Listen, "ada", key, "hello"); code != 200 {
		t.Fatalf("the first message: %d %s", code, body)
	}
	if code, _ := ask(t, a.Listen, "ada", "another-key-0123456789abcdef", "hello"); code != 401 {
		t.Errorf("another key: %d, want 401", code)
	}
	again := u.bind(t, bindLineOf("bob", ada, "another-binding-0123456789", settings))
	if again.OK || !strings.Contains(again.Error, "bound already") {
		t.Errorf("a second bind answered %+v", again)
	}
	u.log.wait(t, "the agent asleep", `"agent asleep"`, `"agent":"ada"`)
	if err := u.cmd.Wait(); err != nil {
		t.Fatalf("the unit's end once its agent slept: %v", err)
	}
	if _, err := os.Stat(u.control); !os.IsNotExist(err) {
		t.Errorf("the control socket is left: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(ada, "chats", "t", "events.jsonl"))
	if !strings.Contains(string(b), "claude-test") {
		t.Errorf("the answer was not the bound settings' model's:\n%s", b)
	}
}

// serve --blank takes its agent from the control line alone.
func TestBlankFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--blank", "c", "--home", "h"},
		{"--blank", "c", "--agents", "a"},
		{"--blank", "c", "--listen", "127.0.0.1:0"},
		{"--sleep-after", "1m", "--home", "h", "--key-file", "k"},
	} {
		if err := serve(args, nil); err == nil || !strings.Contains(err.Error(), "--blank") {
			t.Errorf("serve %q: %v, want a refusal naming --blank", args, err)
		}
	}
}

// TestBlankBindCost measures what a blank unit saves: LNK_BLANK_UNITS
// units (50 in BENCHMARKS.md) started ahead, then bound and sent their
// first message all at once, each timed from its bind line to its first
// answer; beside it, as many cold serve --home starts at once, each timed
// from its start to its first answer. Run with
// LNK_BLANK_UNITS=50 go test -run TestBlankBindCost -v.
func TestBlankBindCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LNK_BLANK_UNITS"))
	if n < 1 {
		t.Skip("LNK_BLANK_UNITS is not set to a count of units")
	}
	modelAddr := startModel(t)
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	const key = "made-for-this-binding-0123456789"
	const settings = `{"model":{"name":"anthropic/claude-test"}}`
	homes := make([]string, n)
	units := make([]*blankUnit, n)
	for i := range n {
		dir := t.TempDir()
		homes[i] = filepath.Join(dir, "ada")
		os.Mkdir(homes[i], 0o700)
		units[i] = startBlank(t, dir, modelAddr)
	}
	timed := func(what string, first func(i int) (time.Duration, error)) {
		took := make([]time.Duration, n)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				d, err := first(i)
				took[i] = d
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		slices.Sort(took)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		t.Logf("%s, %d at once: p50 %.1f ms, p99 %.1f ms, max %.1f ms", what, n, ms(took[n/2]), ms(took[(n*99)/100]), ms(took[n-1]))
	}
	message := func(addr string) error {
		code, _, err := fleettest.Post(http.DefaultClient, "http://"+addr, "ada", key, "t", `{"text":"hello"}`)
		if err == nil && code != 200 {
			err = fmt.Errorf("first message: %d", code)
		}
		return err
	}
	timed("blank unit, bind line to first answer", func(i int) (time.Duration, error) {
		begin := time.Now()
		c, err := net.Dial("unix", units[i].control)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		io.WriteString(c, bindLineOf("ada", homes[i], key, settings)+"\n")
		var a bindAnswer
		if err := json.NewDecoder(c).Decode(&a); err != nil || !a.OK {
			return 0, fmt.Errorf("bind: %+v %v", a, err)
		}
		if err := message(a.Listen); err != nil {
			return 0, err
		}
		return time.Since(begin), nil
	})
	timed("cold serve --home, start to first answer", func(i int) (time.Duration, error) {
		// A home of its own, fresh as the blank unit's was, with the
		// same settings.
		dir := t.TempDir()
		home := filepath.Join(dir, "ada")
		os.Mkdir(home, 0o700)
		os.WriteFile(filepath.Join(home, "config.json"), []byte(settings), 0o600)
		keyFile := filepath.Join(dir, "key")
		os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
		begin := time.Now()
		cmd := exec.Command(filepath.Join(bin, "lnk-link-harness"), "serve", "--home", home, "--key-file", keyFile)
		cmd.Env = append(os.Environ(), "LNK_MODEL_PROXY=http://"+modelAddr, "LNK_HOME="+dir)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		defer terminate(cmd)
		line, err := bufio.NewReader(out).ReadString('\n')
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		if err != nil || !ok {
			return 0, fmt.Errorf("printed %q: %v", line, err)
		}
		if err := message(addr); err != nil {
			return 0, err
		}
		return time.Since(begin), nil
	})
}

// A blank unit bound with a store bridge keeps its conversations through
// it, proving each call with the key made for the binding: the bridge
// knows that key alone, and runs the driver the bound settings name.
func TestBlankUnitStoreBridge(t *testing.T) {
	// lnk store-bridge finds its driver beside itself.
	keptBy(t, "sqlite")
	dir := t.TempDir()
	modelAddr := startModel(t)
	ada := filepath.Join(dir, "ada")
	os.Mkdir(ada, 0o700)
	const key = "made-for-this-binding-0123456789"
	keyFile := filepath.Join(dir, "bridge.key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	_, bridgeAddr := start(t, nil, "lnk", "store-bridge", "--home", ada, "--driver", "sqlite", "--key-file", keyFile)

	u := startBlank(t, dir, modelAddr)
	line, _ := json.Marshal(map[string]any{
		"agent": "ada", "home": ada, "key": key, "store": "http://" + bridgeAddr,
		"settings": json.RawMessage(`{"model":{"name":"anthropic/claude-test"},"storage":{"conversations":"sqlite"}}`),
	})
	a := u.bind(t, string(line))
	if !a.OK {
		t.Fatalf("the bind answered %+v", a)
	}
	if code, body := ask(t, a.Listen, "ada", key, "hello"); code != 200 {
		t.Fatalf("the first message: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(ada, "chats", "events.sqlite")); err != nil {
		t.Errorf("the conversation is not in the bridge's store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ada, "chats", "t", "events.jsonl")); err == nil {
		t.Error("the conversation was kept as a log beside the bridge")
	}
}
