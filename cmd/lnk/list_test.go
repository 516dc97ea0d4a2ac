package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/store/storetest"
)

// TestChatList lists a log, a compact and a driver-kept conversation, by
// thread, with how each is kept, its events and its last event's time;
// folders holding none are left out.
func TestChatList(t *testing.T) {
	o := withDrivers(t)
	h := filepath.Join(t.TempDir(), "ada")
	for _, c := range []struct {
		thread, folder, kind string
		events               int64
	}{
		{"web:3", "web-3", "log", 3},
		{"slack:1", "slack-1", "compact", 5},
		{"telegram:2", "telegram-2", "sqlite", 2},
	} {
		dir := filepath.Join(h, "chats", c.folder)
		os.MkdirAll(dir, 0o700)
		conv, err := o.Open(dir, c.kind)
		if err != nil {
			t.Fatal(err)
		}
		for seq := int64(1); seq <= c.events; seq++ {
			if err := conv.Append(context.Background(), seq, storetest.Event(c.thread, seq, 0)); err != nil {
				t.Fatal(err)
			}
		}
		conv.Close()
	}
	os.MkdirAll(filepath.Join(h, "chats", "empty"), 0o700)
	os.MkdirAll(filepath.Join(h, "chats", "web-3~convert"), 0o700)

	// --agent ada finds it under LNK_HOME/agents.
	os.MkdirAll(filepath.Join(filepath.Dir(h), "agents"), 0o700)
	os.Symlink(h, filepath.Join(filepath.Dir(h), "agents", "ada"))
	for _, args := range [][]string{{"--home", h}, {"--agent", "ada"}} {
		fs := flag.NewFlagSet("list", flag.ContinueOnError)
		agent := agentFlags(fs, func(k string) string { return map[string]string{"LNK_HOME": filepath.Dir(h)}[k] })
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		a, err := agent()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := listChats(context.Background(), &out, a, o); err != nil {
			t.Fatal(err)
		}
		at := func(seq int64) string { return time.Unix(1767225600+seq, seq).UTC().Format(time.RFC3339) }
		want := strings.Join([]string{
			"slack:1\tcompact\t5\t" + at(5),
			"telegram:2\tsqlite\t2\t" + at(2),
			"web:3\tlog\t3\t" + at(3),
		}, "\n") + "\n"
		if out.String() != want {
			t.Errorf("%v listed\n%s\nwant\n%s", args, out.String(), want)
		}
	}
}
