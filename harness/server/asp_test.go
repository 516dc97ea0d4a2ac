package server

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/store/event"
)

func (f *fixture) do(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	resp, b := exchange(t, method, f.url+path, key, string(body), "Accept", "application/jsonl")
	return resp.StatusCode, []byte(b)
}

// imported gives to the state archive, taken out of from, and wants it
// taken whole: threads, its conversations, each with its events in to as
// they are in from, byte for byte.
func imported(t *testing.T, from, to *fixture, archive []byte, threads ...string) {
	t.Helper()
	if code, body := to.do(t, http.MethodPut, "/asp/v1/agents/ada/state", archive); code != 200 || !strings.Contains(string(body), fmt.Sprintf(`"conversations":%d`, len(threads))) {
		t.Fatalf("import: %d %s", code, body)
	}
	for _, thread := range threads {
		_, want := from.do(t, http.MethodGet, "/v1/agents/ada/chats/"+thread, nil)
		code, got := to.do(t, http.MethodGet, "/v1/agents/ada/chats/"+thread, nil)
		if code != 200 || !bytes.Equal(got, want) {
			t.Errorf("%s imported: %d\n%s\nwant\n%s", thread, code, got, want)
		}
	}
}

// An agent's state taken out of one server and given to another with a
// fresh home: its files and every conversation's events, byte for byte,
// and its tool restrictions; the second takes the next turn. A truncated
// or altered archive is refused and leaves the home as it was; a home with
// conversations refuses any.
func TestStateMoves(t *testing.T) {
	from, to := newFixture(t, nil), newFixture(t, nil)
	os.MkdirAll(filepath.Join(from.home, "instructions"), 0o700)
	os.WriteFile(filepath.Join(from.home, "instructions", "persona.md"), []byte("You are Ada.\n"), 0o600)
	os.MkdirAll(filepath.Join(from.home, "memory"), 0o700)
	os.WriteFile(filepath.Join(from.home, "memory", "notes.md"), []byte("# Your notes\n- tea\n"), 0o600)
	from.said(t, "web:1", `{"text":"hello","owner":true}`, `{"text":"hello","owner":true}`)
	from.said(t, "tg:2", `{"text":"hello","owner":true}`)
	os.WriteFile(filepath.Join(from.home, chatFile("tg:2", "tools.json")), []byte(`{"tools":["memory"]}`+"\n"), 0o600)

	code, archive := from.do(t, http.MethodGet, "/asp/v1/agents/ada/state", nil)
	if code != 200 {
		t.Fatalf("export: %d %s", code, archive)
	}
	fresh := tree(t, to.home)
	for name, bad := range map[string][]byte{
		"truncated": archive[:len(archive)/2],
		"altered":   bytes.Replace(archive, []byte(`"text":"hello"`), []byte(`"text":"HELLO"`), 1),
		"empty":     nil,
	} {
		code, body := to.do(t, http.MethodPut, "/asp/v1/agents/ada/state", bad)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "bad state archive") {
			t.Errorf("%s archive: %d %s, want 400", name, code, body)
		}
		if got := tree(t, to.home); got != fresh {
			t.Errorf("a %s archive changed the home:\n%s", name, got)
		}
	}
	imported(t, from, to, archive, "web:1", "tg:2")
	for _, f := range []string{"instructions/persona.md", "memory/notes.md", chatFile("tg:2", "tools.json")} {
		want, _ := os.ReadFile(filepath.Join(from.home, f))
		if got, err := os.ReadFile(filepath.Join(to.home, f)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s imported: %q %v, want %q", f, got, err, want)
		}
	}
	_, had := from.do(t, http.MethodGet, "/v1/agents/ada/chats/web:1", nil)
	next := fmt.Sprintf(`"seq":%d`, bytes.Count(had, []byte("\n"))+2)
	if code, body := to.post(t, "/v1/agents/ada/chats/web:1/messages", key, `{"text":"again","owner":true}`); code != 200 || !strings.Contains(body, next) {
		t.Errorf("the next turn after the import: %d %s", code, body)
	}
	if code, body := to.do(t, http.MethodPut, "/asp/v1/agents/ada/state", archive); code != http.StatusConflict {
		t.Errorf("an import into a home with conversations: %d %s, want 409", code, body)
	}
	if code, body := to.do(t, http.MethodGet, "/asp/v1/agents/ada/status", nil); code != 200 || string(body) != `{"agent":"ada","running":false,"threads":[]}`+"\n" {
		t.Errorf("status: %d %s", code, body)
	}
	if n := to.operations(t, "ada", "import"); n != 1 {
		t.Errorf("imports counted %v, want 1", n)
	}
	if n := from.operations(t, "ada", "export"); n != 1 {
		t.Errorf("exports counted %v, want 1", n)
	}
}

// readState never panics, and what it takes is whole: every conversation's
// events numbered from 1 without a gap.
func FuzzReadState(f *testing.F) {
	var buf bytes.Buffer
	aw := &archiveWriter{tw: tar.NewWriter(&buf)}
	aw.add("config.json", []byte("{}\n"))
	aw.add("chats/t/events.jsonl", []byte(`{"seq":1,"time":"2026-12-03T06:47:43Z","type":"message","thread":"t","text":"hi"}`+"\n"))
	b, _ := json.Marshal(manifest{Format: StateFormat, Agent: "ada", Files: aw.files, Conversations: []manifestThread{{Dir: "t", Thread: "t", Events: 1}}})
	aw.add("manifest.json", b)
	aw.tw.Close()
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := readState(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, errBadState) {
				t.Fatalf("an error that is not errBadState: %v", err)
			}
			return
		}
		for _, th := range st.threads {
			for i, ev := range th.events {
				if seq, err := event.SeqOf(ev); err != nil || seq != int64(i+1) {
					t.Fatalf("%s event %d has seq %d, %v", th.thread, i+1, seq, err)
				}
			}
		}
	})
}

// parseForkBody never panics, and what it takes has before and text.
func FuzzParseForkBody(f *testing.F) {
	f.Add([]byte(`{"before":3,"text":"hi"}`))
	f.Add([]byte(`{"before":3,"text":"hi","id":"x","thread":"t2"}`))
	f.Add([]byte(`{"text":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := parseForkBody(data)
		if err == nil && (b.Before == nil || b.Text == nil) {
			t.Fatalf("%q taken without before or text", data)
		}
	})
}
