package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/storetest"
)

// buildPrograms builds the programs into one folder (buildAll), so lnk
// store-bridge finds its driver lnk-sqlite beside itself, and returns it.
func buildPrograms(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds lnk and lnk-sqlite")
	}
	bin, err := buildAll()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// bridge is a running lnk store-bridge.
type bridge struct {
	url string
	cmd *exec.Cmd
	out *bytes.Buffer
}

// startBridge starts bin's lnk store-bridge on home with driver sqlite, proving
// calls with key, and returns once it listens.
func startBridge(t *testing.T, bin, home, key string) *bridge {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "lnk"), "store-bridge", "--home", home, "--driver", "sqlite", "--key-file", keyFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &bridge{cmd: cmd, out: new(bytes.Buffer)}
	cmd.Stderr = b.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("lnk store-bridge said %q (%v)\n%s", first, err, b.out)
	}
	go io.Copy(io.Discard, stdout)
	b.url = "http://" + addr
	t.Cleanup(func() { b.stop(t) })
	return b
}

// stop ends the bridge as a person would, with SIGTERM, and checks it
// stopped cleanly. It may be called more than once.
func (b *bridge) stop(t *testing.T) {
	if b.cmd.ProcessState != nil {
		return
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("lnk store-bridge ended: %v\n%s", err, b.out)
		}
	case <-time.After(40 * time.Second):
		b.cmd.Process.Kill()
		t.Errorf("lnk store-bridge did not stop on SIGTERM\n%s", b.out)
		<-done
	}
}

func post(t *testing.T, url, method, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/store/v1/"+method, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestStoreBridgeProgram runs the real lnk store-bridge with lnk-sqlite:
// each method answers with the agent's key, and nothing without it.
func TestStoreBridgeProgram(t *testing.T) {
	home := t.TempDir()
	const key = "agent-key-1"
	b := startBridge(t, buildPrograms(t), home, key)
	good, checked := "Bearer "+key, 0
	ev := string(storetest.Event("t", 1, 0))
	calls := []struct {
		method, auth, body string
		status             int
		answer             string // the answer starts so
	}{
		{"append", "", `{"thread":"t","seq":1,"event":` + ev + `}`, 401, `{"error":"the agent's key is needed as bearer"`},
		{"append", "Bearer wrong-key", `{"thread":"t","seq":1,"event":` + ev + `}`, 401, `{"error":"the agent's key is needed as bearer"`},
		{"append", key, `{"thread":"t","seq":1,"event":` + ev + `}`, 401, `{"error"`}, // no "Bearer "
		{"last", "Bearer wrong-key", `{"thread":"t"}`, 401, `{"error"`},
		{"threads", "Bearer " + key + "x", `{}`, 401, `{"error"`},
		{"last", good, `{"thread":"t"}`, 200, `{"last":0}`}, // the wrong keys wrote nothing
		{"append", good, `{"thread":"t","seq":1,"event":` + ev + `}`, 200, `{}`},
		{"append", good, `{"thread":"t","seq":3,"event":` + string(storetest.Event("t", 3, 0)) + `}`, 409, `{"error"`},
		{"last", good, `{"thread":"t"}`, 200, `{"last":1}`},
		{"read", good, `{"thread":"t","from":1,"limit":10}`, 200, `{"events":[` + ev + `],"more":false}`},
		{"threads", good, `{}`, 200, `{"threads":["t"]}`},
		{"lease", good, `{"thread":"t","holder":"h","ttl_ms":60000}`, 200, `{"token":1}`},
		{"append", good, `{"thread":"t","seq":2,"event":` + string(storetest.Event("t", 2, 0)) + `,"lease":2}`, 409, `{"error"`},
		{"release", good, `{"thread":"t","token":1}`, 200, `{}`},
		{"meta_put", good, `{"thread":"t","name":"n","data":"aGk="}`, 200, `{}`},
		{"meta_get", good, `{"thread":"t","name":"n"}`, 200, `{"data":"aGk="}`},
		{"meta_delete", good, `{"thread":"t","name":"n"}`, 200, `{}`},
		{"tools_narrow", good, `{"thread":"t","tools":["a","b"]}`, 200, `{"tools":["a","b"]}`},
		{"no_such_method", good, `{"thread":"t"}`, 501, `{"error"`},
	}
	for _, c := range calls {
		status, answer := post(t, b.url, c.method, c.auth, c.body)
		if status != c.status || !strings.HasPrefix(answer, c.answer) {
			t.Fatalf("%s with %q: %d %.300s, want %d %.300s", c.method, c.auth, status, answer, c.status, c.answer)
		}
		checked++
	}
	b.stop(t)
	if _, err := os.Stat(filepath.Join(home, "chats", "events.sqlite")); err != nil {
		t.Fatalf("the driver kept nothing in the agent's home: %v", err)
	}
	t.Logf("%d calls to lnk store-bridge answered as they should, 5 of them refused for the key", checked)
}

// TestConformanceStoreBridgeProgram runs the conformance suite through the
// real lnk store-bridge program and lnk-sqlite: each store the suite opens
// is a bridge started on its folder, and closing it stops the bridge.
func TestConformanceStoreBridgeProgram(t *testing.T) {
	const key = "agent-key-2"
	bin := buildPrograms(t)
	storetest.RunHome(t, func(t *testing.T, dir string) store.Driver {
		b := startBridge(t, bin, dir, key)
		return stopping{driver.New(driver.NewHTTP(b.url, []byte(key), nil)), func() { b.stop(t) }}
	})
}

// stopping is a driver whose Close also stops its bridge.
type stopping struct {
	*driver.Driver
	stop func()
}

func (s stopping) Close() error {
	err := s.Driver.Close()
	s.stop()
	return err
}
