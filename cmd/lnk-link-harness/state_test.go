package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/fleet/fleettest"
)

// do sends a request with the agent's key, and returns the status and body.
func (h *harness) do(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	resp, b, err := fleettest.Exchange(http.DefaultClient, method, h.url+path, h.key, string(body), "Accept", "application/jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, []byte(b)
}

// files lists every file under dir with its bytes.
func files(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out = append(out, p+"\n"+string(b))
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// An agent's state taken out of one process and into a fresh home served
// by another: every conversation's events byte for byte, and the second
// takes the next turn; a truncated archive is refused, the home as it was.
func TestStateBetweenProcesses(t *testing.T) {
	a, b := startHarness(t, "", false), startHarness(t, "", false)
	for i, thread := range []string{"web:1", "web:1", "tg:2"} {
		if _, err := a.message(thread, "m"+strconv.Itoa(i), "hello "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	code, archive := a.do(t, http.MethodGet, "/asp/v1/agents/ada/state", nil)
	if code != 200 {
		t.Fatalf("export: %d %s", code, archive)
	}
	before := files(t, b.home)
	for _, cut := range []int{len(archive) / 2, len(archive) - 700} { // the manifest gone; the tar's end cut
		if code, body := b.do(t, http.MethodPut, "/asp/v1/agents/ada/state", archive[:cut]); code != 400 {
			t.Fatalf("an archive cut at %d of %d: %d %s, want 400", cut, len(archive), code, body)
		}
		if after := files(t, b.home); after != before {
			t.Fatalf("a truncated archive changed the home:\n%s", after)
		}
	}
	if code, body := b.do(t, http.MethodPut, "/asp/v1/agents/ada/state", archive); code != 200 {
		t.Fatalf("import: %d %s", code, body)
	}
	for _, thread := range []string{"web:1", "tg:2"} {
		_, want := a.do(t, http.MethodGet, "/v1/agents/ada/chats/"+thread, nil)
		if code, got := b.do(t, http.MethodGet, "/v1/agents/ada/chats/"+thread, nil); code != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s in the second process: %d\n%s\nwant\n%s", thread, code, got, want)
		}
	}
	s, err := b.message("web:1", "m9", "and now")
	if err != nil || s.seq != 6 {
		t.Errorf("the next turn in the second process: %+v %v, want seq 6", s, err)
	}
}
