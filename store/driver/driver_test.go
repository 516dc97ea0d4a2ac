package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/storetest"
)

// The test binary is its own plugin program: with LNK_DRIVER_TEST_CHILD
// set it serves the log, kept in folders under --home, on its standard
// input and output; "hang" makes every last call wait forever. With
// LNK_DRIVER_TEST_PIDFILE set it writes its pid there first.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LNK_DRIVER_TEST_CHILD"); mode != "" {
		if f := os.Getenv("LNK_DRIVER_TEST_PIDFILE"); f != "" {
			if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				os.Exit(1)
			}
		}
		home := os.Args[len(os.Args)-1]
		d := logs(home)
		if mode == "hang" {
			d = hanging{d}
		}
		if err := driver.Serve(context.Background(), d, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func logs(root string) store.Driver {
	return storetest.Folders(root, func(dir string) (store.Conversation, error) { return eventlog.Open(dir) })
}

// hanging is a driver whose conversations never answer Last.
type hanging struct{ store.Driver }

func (h hanging) Open(thread string) (store.Conversation, error) {
	c, err := h.Driver.Open(thread)
	return hangingConv{c}, err
}

type hangingConv struct{ store.Conversation }

func (hangingConv) Last(context.Context) (int64, error) { select {} }

// child returns the transport to this test binary as a plugin program.
func child(t *testing.T, mode, home string) *driver.Process {
	t.Setenv("LNK_DRIVER_TEST_CHILD", mode)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return driver.NewProcess(self, "--home", home)
}

func TestConformanceProcess(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		return driver.New(child(t, "log", dir))
	})
}

func TestConformanceHTTP(t *testing.T) {
	key := []byte("agent-key")
	storetest.Run(t, func(t *testing.T, dir string) store.Driver {
		srv := httptest.NewServer(driver.Handler(logs(dir), key))
		t.Cleanup(srv.Close)
		return driver.New(driver.NewHTTP(srv.URL, key, srv.Client()))
	})
}

// TestCallStopped has the plugin program never answer: the call is stopped
// at its limit with ErrTimeout, the program killed, and the next call starts
// a new one.
func TestCallStopped(t *testing.T) {
	home := t.TempDir()
	p := child(t, "hang", home)
	var log bytes.Buffer // written by the calls, read once they returned
	p.Log = slog.New(slog.NewJSONHandler(&log, nil))
	d := driver.New(p)
	defer d.Close()
	d.Limit = 300 * time.Millisecond
	c, err := d.Open("t")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Last(context.Background())
	if !errors.Is(err, driver.ErrTimeout) {
		t.Fatalf("a call never answered: %v, want ErrTimeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stopped after %v", took)
	}
	if !strings.Contains(err.Error(), "no answer in 300ms") {
		t.Errorf("the error does not say the limit: %v", err)
	}
	if p.Running() {
		t.Fatal("the program still runs after its call was stopped")
	}
	// Another call starts the program again (and it answers what does not
	// hang), given the time a loaded machine takes to start a program.
	d.Limit = time.Minute
	ev := storetest.Event("t", 1, 0)
	if err := c.Append(context.Background(), 1, ev); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	// Each start logged once: the first, and the one after the kill, saying why.
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var l struct{ Msg, Driver, After string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %q", line)
		}
		msgs = append(msgs, l.Msg)
		if l.Driver == "" || l.Msg == "driver restarted" && !strings.HasPrefix(l.After, "killed") {
			t.Errorf("log line %s", line)
		}
	}
	if strings.Join(msgs, ",") != "driver started,driver restarted" {
		t.Errorf("logged %v, want the start and the restart", msgs)
	}
}

// TestEnv starts the plugin program in the environment Env gives it, not
// this process's: the pid file it is told of there alone is written.
func TestEnv(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := driver.NewProcess(self, "--home", t.TempDir())
	p.Env = []string{"LNK_DRIVER_TEST_CHILD=log", "LNK_DRIVER_TEST_PIDFILE=" + pidFile}
	d := driver.New(p)
	defer d.Close()
	c, _ := d.Open("t")
	if _, err := c.Last(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Errorf("the program was not started in Env: %v", err)
	}
}

// TestIdleEnds has the plugin program end once no call is made for its idle
// time, and start again for the next call.
func TestIdleEnds(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("LNK_DRIVER_TEST_PIDFILE", pidFile)
	p := child(t, "log", t.TempDir())
	p.Idle = 100 * time.Millisecond
	d := driver.New(p)
	defer d.Close()
	c, _ := d.Open("t")
	if p.Running() {
		t.Fatal("a program runs before any call")
	}
	if _, err := c.Last(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !p.Running() {
		t.Fatal("no program runs after a call")
	}
	// The program ends once idle: wait for its exit, as the kernel reports
	// it, without reaping it (the transport does that).
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil && err != unix.ECHILD { // ECHILD: reaped already
			t.Fatal(err)
		}
		break
	}
	if p.Running() {
		t.Fatal("the transport says a program runs, and its program ended")
	}
	if _, err := c.Last(context.Background()); err != nil {
		t.Fatalf("a call after the idle end: %v", err)
	}
}

func TestHTTPRefuses(t *testing.T) {
	srv := httptest.NewServer(driver.Handler(logs(t.TempDir()), []byte("right")))
	defer srv.Close()
	post := func(path, key string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		path, key string
		body      []byte
		want      int
	}{
		{"/store/v1/last", "", []byte(`{"thread":"t"}`), 401},
		{"/store/v1/last", "wrong", []byte(`{"thread":"t"}`), 401},
		{"/store/v1/last", "righ", []byte(`{"thread":"t"}`), 401},
		{"/store/v1/last", "right", []byte(`{"thread":"t"}`), 200},
		{"/store/v1/last", "right", []byte(`{"thread":`), 400},
		{"/store/v1/last", "right", []byte(`{}`), 400},
		{"/store/v1/nope", "right", []byte(`{"thread":"t"}`), 501},
		{"/store/v2/last", "right", nil, 404},
		{"/store/v1/append", "right", bytes.Repeat([]byte("x"), driver.MaxLine+1), 413},
		{"/store/v1/append", "right", []byte(`{"thread":"t","seq":2,"event":{"seq":2,"type":"message"}}`), 409},
	} {
		if got := post(tt.path, tt.key, tt.body); got != tt.want {
			t.Errorf("POST %s with key %q: %d, want %d", tt.path, tt.key, got, tt.want)
		}
	}
}

// TestWireKeepsBytes sends a line by hand and checks the answer's bytes.
func TestServeLines(t *testing.T) {
	home := t.TempDir()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"append","params":{"thread":"t","seq":1,"event":{"seq":1, "type":"message","text":"<&>"}}}`,
		`not json`,
		`{"jsonrpc":"2.0","id":"x","method":"read","params":{"thread":"t","from":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"lease","params":{"thread":"t","holder":"h","ttl_ms":1000}}`,
	}, "\n")
	var out bytes.Buffer
	// Calls run at once: send them one at a time to read the answers in order.
	for _, line := range strings.Split(in, "\n") {
		if err := driver.Serve(context.Background(), logs(home), strings.NewReader(line+"\n"), &out); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{}}
{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"a line that is not a JSON-RPC request: invalid character 'o' in literal null (expecting 'u')"}}
{"jsonrpc":"2.0","id":"x","result":{"events":[{"seq":1, "type":"message","text":"<&>"}],"more":false}}
`
	got := out.String()
	if !strings.HasPrefix(got, want) {
		t.Fatalf("answers:\n%s\nwant first:\n%s", got, want)
	}
	if !strings.Contains(got, `"id":3,"error":{"code":-32601,`) {
		t.Fatalf("a lease of the log is not answered unsupported:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(home, "t", eventlog.FileName)); err != nil {
		t.Fatal(err)
	}
}
