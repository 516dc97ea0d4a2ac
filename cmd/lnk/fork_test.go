package main

import (
	"bytes"
	"context"
	"flag"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/gcs"
	"lnk.dev/linkharness/store/postgres/pgtest"
)

// lnk agent chat fork, for each way of keeping a conversation: the fork
// holds the old events before the owner message it replaces byte for byte
// (the first naming the new thread), then the new message and its answer;
// a fork of the fork likewise; a before that is no owner message is
// refused with why.
func TestChatFork(t *testing.T) {
	o := withDrivers(t)
	model := scripted.New(nil)
	ms := httptest.NewServer(model)
	t.Cleanup(func() { model.Close(); ms.Close() })
	env := map[string]string{"LNK_MODEL_PROXY": ms.URL}
	getenv := func(k string) string { return env[k] }
	for _, kind := range []string{"log", "compact", "sqlite", "pebble", "postgres", "gcs"} {
		t.Run(kind, func(t *testing.T) {
			switch kind {
			case "postgres":
				pgtest.SchemaEnv(t)
			case "gcs":
				fakeGCS(t)
			}
			h := filepath.Join(t.TempDir(), "ada-"+kind)
			os.MkdirAll(h, 0o700)
			s := settings.Defaults()
			s.Storage.Conversations = kind
			if err := settings.Write(filepath.Join(h, "config.json"), s); err != nil {
				t.Fatal(err)
			}
			r := &turn.Runner{Agent: home.Agent{Name: "ada-" + kind, Dir: h}, Getenv: getenv, HTTP: ms.Client(), Open: o.Open}
			for _, text := range []string{"one", "two", "three"} {
				if _, err := r.Message(context.Background(), "web:1", turn.Message{ID: text, Text: text, Owner: true, From: event.Sender{Name: "Ada"}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			read := func(thread string) [][]byte {
				t.Helper()
				conv, err := r.Conversation(thread)
				if err != nil {
					t.Fatal(err)
				}
				defer conv.Close()
				var out [][]byte
				if err := conv.Read(context.Background(), 1, store.Forward, func(_ int64, ev []byte) bool {
					out = append(out, append([]byte(nil), ev...))
					return true
				}); err != nil {
					t.Fatal(err)
				}
				return out
			}
			check := func(from, to string, before int, old [][]byte) {
				t.Helper()
				got := read(to)
				if len(got) != before+1 {
					t.Fatalf("%s has %d events, want %d", to, len(got), before+1)
				}
				first := bytes.Replace(old[0], []byte(`"thread":"`+from+`"`), []byte(`"thread":"`+to+`"`), 1)
				if !bytes.Contains(first, []byte(`"cache_thread"`)) { // a fork's requests carry its origin's cache key
					first = append(first[:len(first)-1], `,"cache_thread":"`+from+`"}`...)
				}
				if !bytes.Equal(got[0], first) {
					t.Errorf("%s event 1:\n%s\nwant\n%s", to, got[0], first)
				}
				for i := 1; i < before-1; i++ {
					if !bytes.Equal(got[i], old[i]) {
						t.Errorf("%s event %d:\n%s\nwant\n%s", to, i+1, got[i], old[i])
					}
				}
				var e event.Event
				var dec event.Decoder
				if err := dec.Decode(got[before-1], &e); err != nil || e.Type != event.TypeMessage || e.Text != "TWO" || !e.Owner {
					t.Errorf("%s's new message %+v %v", to, e, err)
				}
			}
			old := read("web:1")
			o.Close() // the agent stopped: pebble's files are one process's at a time
			if err := run([]string{"agent", "chat", "fork", "web:1", "--before", "3", "--text", "TWO", "--home", h}, getenv); err != nil {
				t.Fatal(err)
			}
			check("web:1", "web:1:fork3", 3, old)
			fork := read("web:1:fork3")
			o.Close()
			if err := run([]string{"agent", "chat", "fork", "web:1:fork3", "--before", "3", "--text", "TWO", "--home", h}, getenv); err != nil {
				t.Fatal(err)
			}
			check("web:1:fork3", "web:1:fork3:fork3", 3, fork)
			var all []byte
			for _, thread := range []string{"web:1:fork3", "web:1:fork3:fork3"} {
				for _, ev := range read(thread) {
					all = append(append(all, ev...), '\n')
				}
			}
			golden(t, "fork.golden", masked(all))
			o.Close()
			err := run([]string{"agent", "chat", "fork", "web:1", "--before", "2", "--text", "x", "--home", h}, getenv)
			if err == nil || !strings.Contains(err.Error(), "is of type answer, not an owner message") {
				t.Errorf("a fork before an answer: %v", err)
			}
		})
	}
}

// fakeGCS starts fake-gcs-server on loopback with a bucket, and points
// lnk-gcs at it as an emulator (STORAGE_EMULATOR_HOST) for the test.
func fakeGCS(t *testing.T) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "lnk-test"})
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", u.Host)
	t.Setenv(gcs.BucketEnv, "lnk-test")
	t.Setenv(gcs.PrefixEnv, "lnk/")
}

var updateGolden = flag.Bool("update", false, "rewrite the golden files")

// masked is events with what differs from run to run (times, the heads
// holding them, latencies, the model's response ids, and the usage, cost
// and scripted answer that follow the request's bytes) made constant.
func masked(b []byte) []byte {
	for _, m := range []struct{ re, to string }{
		{`"(time|start_time)":"[^"]*"`, `"$1":"T"`},
		{`"head":"\[[^\]]*\]"`, `"head":"[H]"`},
		{`"latency_ms":[0-9]+,`, ``}, // left out when 0
		{`"response_id":"[^"]*"`, `"response_id":"R"`},
		{`"usage":\{[^}]*\}`, `"usage":{}`}, // the request's size: its home's path and times in it
		{`"cost":[0-9.e-]+`, `"cost":0`},
		{`"text":"ok: [0-9a-f]+"`, `"text":"ok: X"`}, // the scripted model's answer, a hash of the request
	} {
		b = regexp.MustCompile(m.re).ReplaceAll(b, []byte(m.to))
	}
	return b
}

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		os.MkdirAll("testdata", 0o700)
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("what was made differs from %s:\n%s\nwant\n%s", path, got, want)
	}
}
