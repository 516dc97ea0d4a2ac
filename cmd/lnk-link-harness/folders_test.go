package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

// send posts text to thread over hc and returns the status, the answer's
// thread and seq, and the body.
func (h *harness) send(hc *http.Client, thread, text string) (int, string, int64, string, error) {
	body, _ := json.Marshal(map[string]any{"text": text, "owner": true})
	code, b, err := fleettest.Post(hc, h.url, "ada", h.key, url.PathEscape(thread), string(body))
	if err != nil {
		return 0, "", 0, "", err
	}
	var a struct {
		Thread string
		Seq    int64
	}
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(b), &a); err != nil {
			return code, "", 0, b, err
		}
	}
	return code, a.Thread, a.Seq, b, nil
}

// folders is the names of the folders in dir, sorted.
func folders(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// firstEvent decodes the first of a conversation's events, and says how
// many it has.
func firstEvent(t *testing.T, conv store.Conversation) (event.Event, int64) {
	t.Helper()
	ctx := context.Background()
	var e event.Event
	var derr error
	err := conv.Read(ctx, 1, store.Forward, func(_ int64, ev []byte) bool {
		var d event.Decoder
		derr = d.Decode(ev, &e)
		return false
	})
	if err == nil {
		err = derr
	}
	last, lerr := conv.Last(ctx)
	if err != nil || lerr != nil {
		t.Fatalf("reading a conversation: %v, %v", err, lerr)
	}
	return e, last
}

// Ten thousand thread names, in other scripts, with punctuation, differing
// only in case or in a character outside [A-Za-z0-9._-], sent to one
// agent: each answered 200 in a folder of its own, whose name is the one
// its thread makes (home.ThreadDir), on a log and on lnk-sqlite, whose
// keys are the folders' names.
func TestThreadNamesEachAFolder(t *testing.T) {
	seed := storetest.Seed(t)
	names := hometest.ThreadNames(rand.New(rand.NewPCG(seed, seed)), 10000)
	if testing.Short() {
		names = names[:500]
	}
	for _, kind := range []string{"log", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "sqlite" {
				if err := buildSQLite(); err != nil {
					t.Fatal(err)
				}
			}
			h := startHarness(t, "", false)
			os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"storage": {"conversations": "`+kind+`"}}`), 0o600)
			const workers = 4
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
			defer hc.CloseIdleConnections()
			next := make(chan string)
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Go(func() {
					for name := range next {
						code, thread, seq, body, err := h.send(hc, name, "hello")
						if err == nil && (code != http.StatusOK || thread != name || seq != 2) {
							err = fmt.Errorf("%q answered %d, thread %q, seq %d: %s", name, code, thread, seq, body)
						}
						if err != nil {
							errs <- err
							for range next { // the rest drained
							}
							return
						}
					}
				})
			}
			for _, name := range names {
				next <- name
			}
			close(next)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			terminate(h.cmd)

			chats := filepath.Join(h.home, "chats")
			dirs := folders(t, chats)
			want := make([]string, len(names))
			of := make(map[string]string, len(names)) // thread by folder
			for i, name := range names {
				dir, err := home.ThreadDir(name)
				if err != nil {
					t.Fatal(err)
				}
				want[i], of[dir] = dir, name
			}
			slices.Sort(want)
			if !slices.Equal(dirs, want) {
				t.Fatalf("chats/ holds %d folders, want %d, one a thread", len(dirs), len(want))
			}
			var (
				db  *sqlite.Driver
				err error
			)
			if kind == "sqlite" {
				if db, err = sqlite.Open(filepath.Join(chats, "events.sqlite")); err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				keys, err := db.Threads(context.Background())
				if err != nil || !slices.Equal(keys, want) {
					t.Fatalf("lnk-sqlite keeps %d conversations (%v), want one a folder, under its name", len(keys), err)
				}
			}
			for _, dir := range dirs {
				var conv store.Conversation
				if kind == "sqlite" {
					if _, err := os.Stat(filepath.Join(chats, dir, "store.sqlite")); err != nil {
						t.Fatalf("%s: no marker: %v", dir, err)
					}
					conv, err = db.Open(dir)
				} else {
					conv, err = eventlog.Open(filepath.Join(chats, dir))
				}
				if err != nil {
					t.Fatal(err)
				}
				e, n := firstEvent(t, conv)
				conv.Close()
				if e.Thread != of[dir] || n != 2 {
					t.Fatalf("%s holds %d events, the first naming %q, want 2 of %q", dir, n, e.Thread, of[dir])
				}
			}
			t.Logf("%d threads answered, each in a folder of its own", len(names))
		})
	}
}

// writeFormer writes, as a home written before the folder rule holds it,
// a conversation of thread in folder chats/<dir>: a message and an answer,
// kept as kind says (a log, or lnk-sqlite's under the folder's name, the
// folder holding its marker).
func writeFormer(t *testing.T, chats, kind, dir, thread string) {
	t.Helper()
	path := filepath.Join(chats, dir)
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []event.Event{
		{Seq: 1, Time: at, Type: event.TypeMessage, Thread: thread, ID: "before-1", Owner: true, Text: "said before the rule to " + thread},
		{Seq: 2, Time: at.Add(time.Second), Type: event.TypeAnswer, Model: "claude-opus-5-5", Provider: "anthropic", Text: "answered before the rule", Window: &event.Window{Start: 1}},
	}
	var conv store.Conversation
	var err error
	switch kind {
	case "log":
		conv, err = eventlog.Open(path)
	case "sqlite":
		if err := os.WriteFile(filepath.Join(path, "store.sqlite"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var db *sqlite.Driver
		if db, err = sqlite.Open(filepath.Join(chats, "events.sqlite")); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conv, err = db.Open(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	for i := range evs {
		if err := conv.Append(context.Background(), evs[i].Seq, event.Append(nil, &evs[i])); err != nil {
			t.Fatal(err)
		}
	}
}

// A home written before the folder rule, its conversations in the folders
// the rule before made (telegram:42 in telegram-42, group:日本 in
// group-------, Web1 in Web1, a b in a-b), kept as a log or by lnk-sqlite,
// is read and continued: each conversation's next turns, reads, fork,
// lnk agent chat list, show and repair find it in its folder, and nothing
// is made where its name makes a folder now; lnk agent chat convert keeps
// it there (a driver keeping it under the folder's name). A name that met one of them there has a folder of its own,
// but for a plain name the rule before made the folder of another's
// (telegram-42), which that conversation holds: refused 409.
func TestHomeWrittenBefore(t *testing.T) {
	former := map[string]string{"telegram:42": "telegram-42", "group:日本": "group-------", "Web1": "Web1", "a b": "a-b"}
	for _, kind := range []string{"log", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			if err := buildSQLite(); err != nil { // the log is converted to it
				t.Fatal(err)
			}
			h := startHarness(t, "", false)
			chats := filepath.Join(h.home, "chats")
			for thread, dir := range former {
				writeFormer(t, chats, kind, dir, thread)
			}
			os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"storage": {"conversations": "`+kind+`"}}`), 0o600)
			hc := &http.Client{}
			answered := func(thread, text string, seq int64) {
				t.Helper()
				code, got, n, body, err := h.send(hc, thread, text)
				if err != nil || code != http.StatusOK || got != thread || n != seq {
					t.Fatalf("%q: %d %s %v; want seq %d", thread, code, body, err, seq)
				}
			}
			for thread := range former {
				answered(thread, "and now", 4)
			}
			answered("group:中国", "and now", 2)
			answered("web1", "and now", 2)
			answered("a:b", "and now", 2)
			if code, _, _, body, _ := h.send(hc, "telegram-42", "hi"); code != http.StatusConflict || !strings.Contains(body, "thread folder holds another thread") {
				t.Errorf("telegram-42, whose folder telegram:42's conversation made before holds: %d %s", code, body)
			}
			for thread, dir := range former {
				now, _ := home.Agent{Dir: h.home}.Path(home.Chat, thread)
				if _, err := os.Stat(now); !os.IsNotExist(err) {
					t.Errorf("%q: a folder made by the rule now, %s, beside %s: %v", thread, filepath.Base(now), dir, err)
				}
				code, b := h.do(t, http.MethodGet, "/v1/agents/ada/chats/"+url.PathEscape(thread), nil)
				if code != 200 || bytes.Count(b, []byte("\n")) != 4 || !bytes.Contains(b, []byte("said before the rule")) {
					t.Errorf("GET %q: %d\n%s", thread, code, b)
				}
			}
			code, b := h.do(t, http.MethodPost, "/v1/agents/ada/chats/"+url.PathEscape("group:日本")+"/fork", []byte(`{"before": 3, "text": "instead"}`))
			if code != 200 || !bytes.Contains(b, []byte(`"thread":"group:日本:fork3","seq":4`)) {
				t.Fatalf("fork of a conversation made before: %d %s", code, b)
			}
			fork, _ := home.ThreadDir("group:日本:fork3")
			if _, err := os.Stat(filepath.Join(chats, fork)); err != nil {
				t.Errorf("the fork's folder: %v", err)
			}
			terminate(h.cmd)

			bin, _ := build()
			lnk := func(args ...string) string {
				t.Helper()
				out, err := exec.Command(filepath.Join(bin, "lnk"), append(args, "--home", h.home)...).CombinedOutput()
				if err != nil {
					t.Fatalf("lnk %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			list := lnk("agent", "chat", "list")
			for thread := range former {
				if !strings.Contains(list, thread+"\t"+kind+"\t4\t") {
					t.Errorf("chat list has no line of %q, %s, 4 events:\n%s", thread, kind, list)
				}
			}
			if show := lnk("agent", "chat", "show", "telegram:42"); !strings.Contains(show, "said before the rule to telegram:42") || !strings.Contains(show, "and now") {
				t.Errorf("chat show telegram:42:\n%s", show)
			}
			to := "sqlite"
			if kind == "log" {
				if out := lnk("agent", "chat", "repair", "group:日本"); !strings.Contains(out, "group:日本 is whole: 4 events") {
					t.Errorf("chat repair group:日本: %s", out)
				}
			} else {
				to = "log"
			}
			lnk("agent", "chat", "convert", "--to", to)
			h.restart(t)
			for thread := range former {
				answered(thread, "after the conversion", 6)
				if _, err := os.Stat(filepath.Join(chats, former[thread], "store."+to)); to != "log" && err != nil {
					t.Errorf("%q after the conversion to %s: its folder holds no marker: %v", thread, to, err)
				}
			}
		})
	}
}
