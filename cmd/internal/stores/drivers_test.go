package stores

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	eventlog "lnk.dev/linkharness/store/log"
	"lnk.dev/linkharness/store/storetest"
)

// As lnk-testdrv (a link to the test binary), it serves the log kept in
// folders under <home>/kept through the driver protocol.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "lnk-testdrv" {
		driver.Serve(context.Background(), kept(os.Args[2]), os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func kept(home string) store.Driver {
	return storetest.Folders(filepath.Join(home, "kept"), func(dir string) (store.Conversation, error) { return eventlog.Open(dir) })
}

func chat(t *testing.T, home, folder string) string {
	dir := filepath.Join(home, "chats", folder)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func roundTrip(t *testing.T, dir, kind string) {
	t.Helper()
	c, err := Open(dir, kind)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Append(context.Background(), 1, storetest.Event("x", 1, 0)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Last(context.Background()); err != nil || n != 1 {
		t.Fatalf("last %d, %v", n, err)
	}
}

func TestDriverByMarker(t *testing.T) {
	bin := t.TempDir()
	self, _ := os.Executable()
	if err := os.Symlink(self, filepath.Join(bin, "lnk-testdrv")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(bridgeEnv, "")
	home := t.TempDir()

	// A new conversation whose kind names a driver gets the marker, and its
	// events go to the driver, not the folder.
	dir := chat(t, home, "telegram-42")
	roundTrip(t, dir, "testdrv")
	if _, err := os.Stat(filepath.Join(dir, "store.testdrv")); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); err == nil {
		t.Fatal("the folder holds a log")
	}
	if _, err := os.Stat(filepath.Join(home, "kept", "telegram-42", "events.jsonl")); err != nil {
		t.Fatalf("the driver did not keep it: %v", err)
	}
	// Read later with no kind, the marker says who keeps it.
	c, err := Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Last(context.Background()); err != nil || n != 1 {
		t.Fatalf("reopened: last %d, %v", n, err)
	}
	// A folder already kept as a log stays a log, whatever kind says.
	logDir := chat(t, home, "old")
	roundTrip(t, logDir, "")
	roundTrip(t, logDir, "testdrv")
	if _, err := os.Stat(filepath.Join(logDir, "store.testdrv")); err == nil {
		t.Fatal("a log was marked for a driver")
	}
	// A driver with no program is a clear error.
	if _, err := Open(chat(t, home, "nope"), "nosuchdriver"); err == nil {
		t.Fatal("a driver with no program opened")
	}
}

func TestDriverThroughBridge(t *testing.T) {
	home, bridgeHome := t.TempDir(), t.TempDir()
	srv := httptest.NewServer(driver.Handler(kept(bridgeHome), []byte("k3y")))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("k3y\n"), 0o600)
	t.Setenv(bridgeEnv, srv.URL)
	t.Setenv(bridgeKeyEnv, keyFile)
	dir := chat(t, home, "a")
	roundTrip(t, dir, "anydriver")
	if _, err := os.Stat(filepath.Join(bridgeHome, "kept", "a", "events.jsonl")); err != nil {
		t.Fatalf("the bridge's driver did not keep it: %v", err)
	}
}
