package turn

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/driver"
	"lnk.dev/linkharness/store/sqlite"
)

// A conversation a driver keeps has no copy for people beside it: its
// folder keeps only its marker and what is not an event. A copy left from
// when it was a log is taken away, since it would be read in place of the
// events and never grow; the copy made from the events holds every turn.
func TestNoCopyBesideADriversConversation(t *testing.T) {
	r, _ := driverRunner(t)
	ctx := context.Background()
	for _, text := range []string{"one", "two"} {
		if _, err := r.Message(ctx, "t", Message{Text: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	copyPath, _ := r.Agent.Path(home.ChatCopy, "t")
	if _, err := os.Stat(copyPath); !os.IsNotExist(err) {
		t.Fatalf("chat.md beside a driver's conversation: %v", err)
	}
	os.WriteFile(copyPath, []byte("a copy from when it was a log\n"), 0o600)
	if _, err := r.Message(ctx, "t", Message{Text: "three"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(copyPath); !os.IsNotExist(err) {
		t.Fatalf("a copy left from before is still there: %v", err)
	}
	made := madeCopy(t, r, "t")
	for _, want := range []string{"one", "two", "three", "<!-- lnk:answer 6 -->"} {
		if !strings.Contains(made, want) {
			t.Errorf("the copy made from the events lacks %q:\n%s", want, made)
		}
	}
}

// driverRunner is newRunner with its conversations kept by SQLite, reached
// as the harness reaches a driver: through the protocol's client, here
// over the store bridge's handler. It returns the store too.
func driverRunner(t *testing.T) (*Runner, *sqlite.Driver) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key := []byte("agent-key")
	srv := httptest.NewServer(driver.Handler(db, key))
	t.Cleanup(srv.Close)
	d := driver.New(driver.NewHTTP(srv.URL, key, srv.Client()))
	t.Cleanup(func() { d.Close() })
	r, _ := newRunner(t, nil)
	r.Open = func(dir, kind string) (store.Conversation, error) { return d.Open(filepath.Base(dir)) }
	return r, db
}
