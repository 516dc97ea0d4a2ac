package sqlite_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

// TestSQLite3Shows reads the file with Debian's sqlite3, the command the
// package's doc gives: it prints each event as it was appended, one a line,
// while the driver has the file open and after it is closed.
func TestSQLite3Shows(t *testing.T) {
	cli, err := exec.LookPath("sqlite3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sqlite3 is not installed: CI must install it (see .ci/run)")
		}
		t.Skip("sqlite3 is not installed")
	}
	chats := filepath.Join(t.TempDir(), "chats")
	if err := os.Mkdir(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(chats, sqlite.FileName)
	d, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const n = 20 // seq 9 and 18 are long; every one holds bytes JSON escapes
	want := storetest.AppendThreads(t, d, n, "telegram-42", "x")
	show := func(when string) {
		t.Helper()
		out, err := exec.Command(cli, path, "select event from events where thread='x' order by seq").Output()
		if err != nil {
			t.Fatalf("sqlite3 %s: %v", when, err)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("sqlite3 %s prints %d bytes, %d lines; want the %d events appended, %d bytes", when, len(out), bytes.Count(out, []byte("\n")), n, len(want))
		}
		out, err = exec.Command(cli, path, "select count(*) from events").Output()
		if err != nil || string(out) != "40\n" {
			t.Fatalf("sqlite3 %s counts %q (%v), want 40 events", when, out, err)
		}
	}
	show("while the driver has the file open")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	show("after the driver closed it")
	t.Logf("sqlite3 printed thread x's %d events (%d bytes) byte for byte, twice, and counted 40 in the file", n, len(want))
}
