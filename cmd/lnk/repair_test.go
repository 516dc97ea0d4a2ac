package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/compact"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

const repairThread = "telegram:42"

// runner is an agent in home h whose turns talk to the scripted model, its
// conversations kept as kind.
func runner(t *testing.T, h, kind string) *turn.Runner {
	model := scripted.New(nil)
	ms := httptest.NewServer(model)
	t.Cleanup(func() { model.Close(); ms.Close() })
	env := map[string]string{"LNK_MODEL_PROXY": ms.URL}
	open := func(dir, _ string) (store.Conversation, error) {
		if kind == "compact" {
			return compact.Open(dir)
		}
		return eventlog.Open(dir)
	}
	return &turn.Runner{Agent: home.Agent{Name: "ada", Dir: h}, Getenv: func(k string) string { return env[k] }, HTTP: &http.Client{}, Open: open}
}

func say(r *turn.Runner, text string) (turn.Answer, error) {
	return r.Message(context.Background(), repairThread, turn.Message{ID: text, Text: text, From: event.Sender{ID: "u1", Name: "Ada"}, Connection: "telegram"}, nil)
}

// line returns the offset of the nth line (from 0) of b, and its end.
func line(b []byte, n int) (int, int) {
	at := 0
	for range n {
		at += bytes.IndexByte(b[at:], '\n') + 1
	}
	return at, at + bytes.IndexByte(b[at:], '\n')
}

// TestChatRepair damages a conversation, kept as a log or compact, in each
// way a person or a failing disk might: the next turn fails naming the
// file and the offset (or, for a torn final line, repairs it itself and
// answers); lnk agent chat repair keeps what is whole, says what it moved,
// and a turn then answers.
func TestChatRepair(t *testing.T) {
	for _, tc := range []struct {
		kind, name string
		file       string                       // the file the turn's error names, in the folder
		damage     func(b []byte) ([]byte, int) // the file's damaged bytes, and the offset to report
		torn       bool
	}{
		{"log", "middle line invalid json", eventlog.FileName, func(b []byte) ([]byte, int) {
			at, end := line(b, 20)
			return append(append(bytes.Clone(b[:at]), `{"seq":21,"time":"20`...), b[end:]...), at
		}, false},
		{"log", "seq changed by hand", eventlog.FileName, func(b []byte) ([]byte, int) {
			at, _ := line(b, 20)
			b = bytes.Clone(b)
			copy(b[at:], `{"seq":22`)
			return b, at
		}, false},
		{"log", "garbage line appended", eventlog.FileName, func(b []byte) ([]byte, int) {
			return append(bytes.Clone(b), "garbage\n"...), len(b)
		}, false},
		{"log", "torn final line", eventlog.FileName, func(b []byte) ([]byte, int) {
			return append(bytes.Clone(b), `{"seq":41,"ti`...), len(b)
		}, true},
		{"compact", "flipped byte in a seal", compact.FramesName, func(b []byte) ([]byte, int) {
			b = bytes.Clone(b)
			seal := len(b) - compact.SealSize
			b[seal+12] ^= 1 // the seal's count of events; zstd -dc still decodes the file
			return b, seal
		}, false},
		{"compact", "truncated frame", compact.FramesName, func(b []byte) ([]byte, int) {
			// The unit starts after the thread frame: 8 bytes and its payload.
			at := 8 + len(`{"thread":"telegram:42"}`)
			return b[:len(b)-100], at
		}, false},
		{"compact", "garbage line appended to the tail", compact.TailName, func(b []byte) ([]byte, int) {
			return append(bytes.Clone(b), "garbage\n"...), len(b)
		}, false},
	} {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			h := filepath.Join(t.TempDir(), "ada")
			os.Mkdir(h, 0o700)
			r := runner(t, h, tc.kind)
			for i := range 20 { // 40 events: a frame of 32, when compact
				if _, err := say(r, fmt.Sprintf("message %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			dir, _ := r.Agent.Path(home.Chat, repairThread)
			path := filepath.Join(dir, tc.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damaged, off := tc.damage(b)
			os.WriteFile(path, damaged, 0o600)

			_, err = say(r, "after the damage")
			if tc.torn {
				if err != nil {
					t.Fatalf("a torn final line: %v", err)
				}
				return
			}
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%s at offset %d", path, off)) {
				t.Fatalf("the turn after the damage: %v; want it named %s at offset %d", err, path, off)
			}

			var out bytes.Buffer
			if err := repairChat(context.Background(), &out, r.Agent, repairThread, dir, tc.kind); err != nil {
				t.Fatalf("repair: %v", err)
			}
			if !strings.Contains(out.String(), "moved ") || !strings.Contains(out.String(), ".damaged") || !strings.Contains(out.String(), "kept ") {
				t.Errorf("repair said %q", out.String())
			}
			a, err := say(r, "after the repair")
			if err != nil || a.Text == "" {
				t.Fatalf("the turn after the repair: %+v %v", a, err)
			}
			out.Reset()
			if err := repairChat(context.Background(), &out, r.Agent, repairThread, dir, tc.kind); err != nil || !strings.Contains(out.String(), "is whole") {
				t.Fatalf("repair again: %q %v", out.String(), err)
			}
		})
	}
}

// TestChatRepairRefused: not while the agent is served, not for a thread
// with no conversation, not for a driver's conversation.
func TestChatRepairRefused(t *testing.T) {
	h := t.TempDir()
	release := served(t, h)
	err := run([]string{"agent", "chat", "repair", "--home", h, "t"}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "the agent is running") || !strings.Contains(err.Error(), "then repair") {
		t.Fatalf("repair while served: %v", err)
	}
	release()
	if err := run([]string{"agent", "chat", "repair", "--home", h, "nosuch"}, noEnv); err == nil || !strings.Contains(err.Error(), `no conversation "nosuch"`) {
		t.Fatalf("repair of no conversation: %v", err)
	}
	err = repairChat(context.Background(), new(bytes.Buffer), home.Agent{Name: "ada", Dir: h}, "t", filepath.Join(h, "chats", "t"), "sqlite")
	if err == nil || !strings.Contains(err.Error(), "the driver sqlite") {
		t.Fatalf("repair of a driver's conversation: %v", err)
	}
}
