package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/sqlite"
	"lnk.dev/linkharness/store/storetest"
)

// shared opens conversation "race" in the file in dir, as each of the
// processes racing on it does.
func shared(t *testing.T, dir string) store.Conversation {
	d, err := sqlite.Open(filepath.Join(dir, sqlite.FileName))
	return storetest.OpenThread(t, d, err, "race")
}

// TestRaceTurns has two processes race turns on one conversation in one
// file (storetest.RaceTurns). The file is in memory (/dev/shm) where there
// is one: the race checks how writers are kept apart, which a disk does not
// change, and 40,000 fsyncs on a shared disk would make it minutes long.
func TestRaceTurns(t *testing.T) {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		t.Setenv("TMPDIR", "/dev/shm")
	}
	storetest.RaceTurns(t, shared, storetest.RaceLength())
}

// TestStoppedHolder stops a lease holder past its time to live
// (storetest.StoppedHolder). A process stopped inside a transaction keeps
// the file's write lock, and every other writer waits for it, so the
// holder is stopped where it holds no lock: when another connection can
// take the write lock at once.
func TestStoppedHolder(t *testing.T) {
	storetest.StoppedHolder(t, shared, func(t *testing.T, dir string, pid int) bool {
		db, err := sql.Open("sqlite", filepath.Join(dir, sqlite.FileName)) // busy_timeout 0: fail at once
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			return false
		}
		conn.ExecContext(context.Background(), "ROLLBACK")
		return true
	})
}
