package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/store/event"
)

// Two processes serving one home take turns on one conversation: four
// callers alternate between them, and every message is answered 200, is
// written once, and has an answer after it; the seqs run 1..n.
func TestTwoProcessesOneThread(t *testing.T) {
	for _, kind := range []string{"log", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			keptBy(t, kind)
			h := startHarness(t, "[[rule]]\nmatch = \"any\"\ntext = \"answer to {text}\"\nlatency_ms = 5\n", false)
			os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"storage": {"conversations": "`+kind+`"}}`), 0o600)
			// The second process on the same home, key and model.
			second := &harness{home: h.home, key: h.key}
			keyFile := filepath.Join(filepath.Dir(h.home), "key")
			var env []string
			for _, a := range h.cmd.Env {
				if strings.HasPrefix(a, "LNK_MODEL_PROXY=") { // the last one is the test's
					env = append(env, a)
				}
			}
			_, addr := start(t, env, "lnk-link-harness", "serve", "--home", h.home, "--listen", "127.0.0.1:0", "--key-file", keyFile)
			second.url = "http://" + addr
			procs := []*harness{h, second}

			const callers, each = 4, 10
			answers := hometest.Share(t, callers, each, func(by int, id string) (int64, error) {
				s, err := procs[by].message("shared", id, id)
				return s.seq, err
			})
			hometest.CheckShared(t, h.events(t, "shared"), answers, callers*each)
		})
	}
}

// events reads thread's events as the harness serves them, one a line.
func (h *harness) events(t *testing.T, thread string) []event.Event {
	t.Helper()
	code, body := h.do(t, http.MethodGet, "/v1/agents/ada/chats/"+thread, nil)
	if code != 200 {
		t.Fatalf("reading %s: %d %s", thread, code, body)
	}
	var evs []event.Event
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, event.MaxBytes+1)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}
