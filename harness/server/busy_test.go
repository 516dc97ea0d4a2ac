package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/settings"
)

// A message whose conversation another process's turn holds past the
// turn's time is refused with 503 and a Retry-After, nothing of it
// written; sent again once the folder is let go, it is answered.
func TestBusyIs503(t *testing.T) {
	f := newFixture(t, nil)
	s := settings.Defaults()
	s.Turn.Timeout = settings.Duration(time.Second)
	if err := settings.Write(filepath.Join(f.home, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.home, "chats", "t")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil { // another open file: another process, as the kernel sees it
		t.Fatal(err)
	}
	post := func() (*http.Response, string) {
		return exchange(t, http.MethodPost, f.url+"/v1/agents/ada/chats/t/messages", key, `{"id":"m1","text":"hello"}`)
	}
	resp, body := post()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "held by another process's turn") {
		t.Fatalf("%d, Retry-After %q, %s; want 503 with a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if strings.Contains(body, f.home) {
		t.Errorf("the error shows the home's path: %s", body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl")); len(b) != 0 {
		t.Errorf("the refused message was written:\n%s", b)
	}
	unix.Flock(fd, unix.LOCK_UN)
	if resp, body := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("once let go: %d %s", resp.StatusCode, body)
	}
}
