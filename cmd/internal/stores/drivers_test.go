package stores

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

func roundTrip(t *testing.T, o *Opener, dir, kind string) {
	t.Helper()
	c, err := o.Open(dir, kind)
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
	home := t.TempDir()
	o := new(Opener)
	defer o.Close()

	// A new conversation whose kind names a driver gets the marker, and its
	// events go to the driver, not the folder.
	dir := chat(t, home, "telegram-42")
	roundTrip(t, o, dir, "testdrv")
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
	c, err := o.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Last(context.Background()); err != nil || n != 1 {
		t.Fatalf("reopened: last %d, %v", n, err)
	}
	// A folder already kept as a log stays a log, whatever kind says.
	logDir := chat(t, home, "old")
	roundTrip(t, o, logDir, "log")
	roundTrip(t, o, logDir, "testdrv")
	if _, err := os.Stat(filepath.Join(logDir, "store.testdrv")); err == nil {
		t.Fatal("a log was marked for a driver")
	}
	// A driver with no program is a clear error naming the kinds, and so
	// is a name no driver has; neither falls back to the log, and the
	// folder is left as it was.
	for _, kind := range []string{"nosuchdriver", "No Such", "perevent"} {
		dir := chat(t, home, "nope")
		_, err := o.Open(dir, kind)
		if !errors.Is(err, ErrBadKind) || !strings.Contains(err.Error(), "log, compact, or a driver's name") {
			t.Fatalf("kind %q: %v", kind, err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 0 {
			t.Fatalf("kind %q: the folder holds %v", kind, names)
		}
	}
	// Read with no kind, a folder holding nothing is not found.
	if _, err := o.Open(chat(t, home, "empty"), ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an empty folder read: %v", err)
	}
}

func TestDriverThroughBridge(t *testing.T) {
	home, bridgeHome := t.TempDir(), t.TempDir()
	srv := httptest.NewServer(driver.Handler(kept(bridgeHome), []byte("k3y")))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("k3y\n"), 0o600)
	o, err := FromEnv(func(k string) string { return map[string]string{BridgeEnv: srv.URL, BridgeKeyEnv: keyFile}[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	dir := chat(t, home, "a")
	roundTrip(t, o, dir, "anydriver")
	if _, err := os.Stat(filepath.Join(bridgeHome, "kept", "a", "events.jsonl")); err != nil {
		t.Fatalf("the bridge's driver did not keep it: %v", err)
	}
}
