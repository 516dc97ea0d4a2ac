package chatcopy

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
)

// A part holds what was said since the answer before, each answer (one
// that calls a tool too) closing its part with its mark; a copy held open is written at its end while it
// is the file its holder left, and read again once a person wrote to it.
func TestAddAndOpen(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	said := []event.Event{
		{Seq: 1, Type: event.TypeMessage, Time: at, From: event.Sender{Name: "Ada"}, Text: "What is on today?"},
		{Seq: 2, Type: event.TypeAnswer, Time: at, Text: "Nothing.", Calls: []event.Call{{ID: "c", Name: "calendar__list"}}},
		{Seq: 3, Type: event.TypeResult, Time: at, CallID: "c", Text: "[]"},
		{Seq: 4, Type: event.TypeAnswer, Time: at, Text: "Nothing is on today."},
		{Seq: 5, Type: event.TypeMessage, Time: at, From: event.Sender{ID: "bob"}, Text: "And tomorrow?"},
		{Seq: 6, Type: event.TypeAnswer, Time: at},
	}
	path := filepath.Join(t.TempDir(), "chat.md")
	c, ends, err := Open(path, 0, File{})
	if err != nil || !ends {
		t.Fatalf("a new copy: ends %v, %v", ends, err)
	}
	if _, err := c.Add(path, "link", said); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	when := at.Local().Format("2006-01-02 15:04")
	want := "**Ada** · " + when + "\n\nWhat is on today?\n\n" +
		"**link** · " + when + "\n\nNothing.\n\n" + mark(2) +
		"**link** · " + when + "\n\nNothing is on today.\n\n" + mark(4) +
		"**bob** · " + when + "\n\nAnd tomorrow?\n\n" + mark(6)
	if string(got) != want {
		t.Fatalf("the copy:\n%s\nwant:\n%s", got, want)
	}
	if kept, ends, err := Open(path, 6, c); err != nil || !ends || kept != c {
		t.Errorf("the copy as it was left: ends %v, the same file %v, %v", ends, kept == c, err)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("a line of mine\n")
	f.Close()
	again, ends, err := Open(path, 6, c)
	if err != nil || ends || again == c {
		t.Errorf("a copy written to: ends %v, the file kept %v, %v", ends, again == c, err)
	}
	again.Close()
}
