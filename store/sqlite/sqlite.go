package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/lease"
	"lnk.dev/linkharness/store/internal/rows"
	"lnk.dev/linkharness/store/internal/rules"
)

var (
	_ store.Driver       = (*Driver)(nil)
	_ store.Lister       = (*Driver)(nil)
	_ store.Conversation = (*Conversation)(nil)
	_ store.Leaser       = (*Conversation)(nil)
	_ store.LeaseTaker   = (*Conversation)(nil)
	_ store.Meta         = (*Conversation)(nil)
	_ store.Narrower     = (*Conversation)(nil)
	_ store.Forgetter    = (*Conversation)(nil)
)

// Part of the format.
const (
	// FileName is the file's name in the agent's chats folder.
	FileName = "events.sqlite"
	// SchemaVersion is PRAGMA user_version of a file this package made.
	SchemaVersion = 1
)

// BusyTimeout is how long a write waits for another's lock on the file.
// It is under the 30 seconds a driver call may take.
const BusyTimeout = 25 * time.Second

const schema = `
CREATE TABLE IF NOT EXISTS events (
	thread TEXT NOT NULL,
	seq INTEGER NOT NULL,
	event TEXT NOT NULL,
	PRIMARY KEY (thread, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
	thread TEXT NOT NULL PRIMARY KEY,
	holder TEXT NOT NULL,
	token INTEGER NOT NULL,
	gen INTEGER NOT NULL,
	ttl_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
	thread TEXT NOT NULL,
	name TEXT NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (thread, name)
) WITHOUT ROWID;
PRAGMA user_version = ` + "1" // SchemaVersion

// Driver keeps an agent's conversations in one SQLite file. It is safe for
// concurrent use, and so are its Conversations; other processes may use
// the same file at once. Use Open; the zero value is not usable.
type Driver struct {
	db   *sql.DB
	path string

	// watch times other holders' leases on this process's clock.
	watch lease.Watch
}

// Open opens the file at path, making it and its tables when they are not
// there. The file is its owner's alone (0600), and so are the -wal and
// -shm beside it, which SQLite makes with the file's mode.
func Open(path string) (*Driver, error) {
	if err := private(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.Itoa(int(BusyTimeout/time.Millisecond)))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// A few connections: readers beside one writer. Idle ones close, so an
	// idle agent holds little.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(2)
	db.SetConnMaxIdleTime(time.Minute)
	d := &Driver{db: db, path: path}
	var v int
	if err := whileBusy(func() error { return db.QueryRow("PRAGMA user_version").Scan(&v) }); err != nil {
		db.Close()
		return nil, d.errorf("read the schema version: %w", err)
	}
	switch v {
	case 0:
		if err := whileBusy(func() error { _, err := db.Exec(schema); return err }); err != nil {
			db.Close()
			return nil, d.errorf("make the tables: %w", err)
		}
	case SchemaVersion:
	default:
		db.Close()
		return nil, d.errorf("schema version %d, this program knows %d", v, SchemaVersion)
	}
	return d, nil
}

// whileBusy runs f, the first uses of a new file's connections, again
// while it meets SQLITE_BUSY, for at most BusyTimeout. Two processes
// opening one new file at once meet it although the busy timeout is set:
// SQLite calls no busy handler while a connection is being set up, as
// when the other turns the file to WAL or recovers its index.
func whileBusy(f func() error) error {
	deadline := time.Now().Add(BusyTimeout)
	wait := time.Millisecond
	for {
		err := f()
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait) // a back-off on another process's lock, not a wait in a test
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// busy says err is SQLite's SQLITE_BUSY, "database is locked", with any
// extended code.
func busy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}

// private makes the file at path, empty and 0600, when it is not there:
// SQLite would make it 0644, readable by every user of the machine, and
// takes an empty file as a new database. A file made so before is made
// 0600 too where it can be (its owner's, on a disk that takes writes).
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		f.Chmod(fi.Mode().Perm() &^ 0o077) // as far as it goes: the file is read either way
	}
	return nil
}

func (d *Driver) errorf(format string, args ...any) error {
	return fmt.Errorf("sqlite: %s: "+format, append([]any{d.path}, args...)...)
}

// Open returns thread's conversation; it reads nothing.
func (d *Driver) Open(thread string) (store.Conversation, error) {
	if err := rules.Thread(thread); err != nil {
		return nil, d.errorf("%w", err)
	}
	return &Conversation{d: d, thread: thread}, nil
}

// Close closes the file.
func (d *Driver) Close() error {
	if err := d.db.Close(); err != nil {
		return d.errorf("close: %w", err)
	}
	return nil
}

// Threads lists the threads with events, stepping from one to the next in
// the key's order, so it costs a seek per thread, not a read per event.
func (d *Driver) Threads(ctx context.Context) ([]string, error) {
	threads := []string{}
	after := ""
	for {
		var th string
		err := d.db.QueryRowContext(ctx, `SELECT thread FROM events WHERE thread > ? ORDER BY thread LIMIT 1`, after).Scan(&th)
		if errors.Is(err, sql.ErrNoRows) {
			return threads, nil
		}
		if err != nil {
			return nil, d.errorf("threads: %w", err)
		}
		threads = append(threads, th)
		after = th
	}
}

// Conversation is one thread's conversation in the file. It holds nothing
// open between calls and is safe for concurrent use.
type Conversation struct {
	d      *Driver
	thread string
}

func (c *Conversation) errorf(format string, args ...any) error {
	return c.d.errorf("thread %q: "+format, append([]any{c.thread}, args...)...)
}

// Last returns the highest seq written, or 0.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	last, err := step{c, c.d.db}.Last(ctx)
	if err != nil {
		return 0, c.errorf("last: %w", err)
	}
	return last, nil
}

// Append appends with no lease token.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.AppendLeased(ctx, seq, event, 0)
}

// AppendLeased writes event as seq in one transaction that takes the file's
// write lock, then checks the lease, the last seq and, for a taken seq, its
// bytes (rows.Append).
func (c *Conversation) AppendLeased(ctx context.Context, seq int64, event []byte, token int64) error {
	if err := rules.Event(seq, event); err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	return c.tx(ctx, "append", func(s step) error {
		return rows.Append(ctx, s, c.thread, seq, event, token)
	})
}

// tx runs fn in one transaction, begun IMMEDIATE, and commits it.
func (c *Conversation) tx(ctx context.Context, what string, fn func(step) error) error {
	tx, err := c.d.db.BeginTx(ctx, nil)
	if err != nil {
		return c.errorf("%s: begin: %w", what, err)
	}
	if err := fn(step{c, tx}); err != nil {
		tx.Rollback()
		return c.errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return c.errorf("%s: commit: %w", what, err)
	}
	return nil
}

// Read hands out the events from seq from, reading rows as fn takes them.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error {
	var rows *sql.Rows
	var err error
	switch {
	case reverse:
		if from <= 0 {
			from = math.MaxInt64
		}
		rows, err = c.d.db.QueryContext(ctx, `SELECT seq, event FROM events WHERE thread = ? AND seq <= ? ORDER BY seq DESC`, c.thread, from)
	case from <= 0:
		rows, err = c.d.db.QueryContext(ctx, `SELECT seq, event FROM events WHERE thread = ? ORDER BY seq DESC LIMIT 1`, c.thread)
	default:
		rows, err = c.d.db.QueryContext(ctx, `SELECT seq, event FROM events WHERE thread = ? AND seq >= ? ORDER BY seq`, c.thread, from)
	}
	if err != nil {
		return c.errorf("read from %d: %w", from, err)
	}
	defer rows.Close()
	var (
		seq   int64
		event sql.RawBytes
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &event); err != nil {
			return c.errorf("read from %d: %w", from, err)
		}
		if !fn(seq, event) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return c.errorf("read from %d: %w", from, err)
	}
	return nil
}

// Close does nothing: a Conversation holds nothing open.
func (c *Conversation) Close() error { return nil }

// KeepsNoCopy says a conversation a driver keeps has no copy for people
// (chat.md) beside it: its folder keeps only its marker and what is not an
// event, and the copy is made from the events when one is asked for.
func (c *Conversation) KeepsNoCopy() bool { return true }

// Lease takes or renews the lease in one transaction.
func (c *Conversation) Lease(ctx context.Context, holder string, ttl time.Duration) (int64, error) {
	token, _, err := c.LeaseFrom(ctx, holder, ttl)
	return token, err
}

// LeaseFrom is Lease, also saying whose lease ran out for it.
func (c *Conversation) LeaseFrom(ctx context.Context, holder string, ttl time.Duration) (int64, string, error) {
	var (
		token  int64
		ranOut string
	)
	err := c.tx(ctx, "lease", func(s step) (err error) {
		token, ranOut, err = rows.Take(ctx, s, &c.d.watch, c.thread, holder, ttl)
		return err
	})
	return token, ranOut, err
}

// Release lets the lease of token go.
func (c *Conversation) Release(ctx context.Context, token int64) error {
	return c.tx(ctx, "release", func(s step) error { return rows.Release(ctx, s, c.thread, token) })
}

// MetaGet returns the side datum name, or store.ErrNotFound.
func (c *Conversation) MetaGet(ctx context.Context, name string) ([]byte, error) {
	data, err := rows.Get(ctx, step{c, c.d.db}, name)
	if err != nil {
		return nil, c.errorf("%w", err)
	}
	return data, nil
}

// MetaPut sets the side datum name.
func (c *Conversation) MetaPut(ctx context.Context, name string, data []byte) error {
	if err := rules.Datum(name, data); err != nil {
		return c.errorf("%w", err)
	}
	return c.tx(ctx, "meta put", func(s step) error { return s.PutMeta(ctx, name, data, false) })
}

// MetaDelete removes the side datum name.
func (c *Conversation) MetaDelete(ctx context.Context, name string) error {
	if err := rules.Name(name); err != nil {
		return c.errorf("%w", err)
	}
	return c.tx(ctx, "meta delete", func(s step) error {
		_, err := s.q.ExecContext(ctx, `DELETE FROM meta WHERE thread = ? AND name = ?`, c.thread, name)
		return err
	})
}

// Forget deletes the conversation's events and side data in one
// transaction; its lease row stays, so its tokens keep growing.
func (c *Conversation) Forget(ctx context.Context) error {
	return c.tx(ctx, "forget", func(s step) error {
		if _, err := s.q.ExecContext(ctx, `DELETE FROM events WHERE thread = ?`, c.thread); err != nil {
			return err
		}
		_, err := s.q.ExecContext(ctx, `DELETE FROM meta WHERE thread = ?`, c.thread)
		return err
	})
}

// NarrowTools narrows the tool list in one transaction.
func (c *Conversation) NarrowTools(ctx context.Context, tools []string) ([]string, error) {
	var kept []string
	err := c.tx(ctx, "narrow tools", func(s step) (err error) {
		kept, err = rows.Narrow(ctx, s, tools)
		return err
	})
	return kept, err
}

// step is a conversation's reads and writes (rows.Step) through q: a
// transaction, or the database for a read alone.
type step struct {
	c *Conversation
	q interface {
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
}

// Lease reads the lease's row; no row is the zero Record.
func (s step) Lease(ctx context.Context) (lease.Record, error) {
	var r lease.Record
	var ttl int64
	err := s.q.QueryRowContext(ctx, `SELECT holder, token, gen, ttl_ms FROM leases WHERE thread = ?`, s.c.thread).Scan(&r.Holder, &r.Token, &r.Gen, &ttl)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Record{}, nil
	}
	r.TTL = time.Duration(ttl) * time.Millisecond
	return r, err
}

func (s step) PutLease(ctx context.Context, _, next lease.Record) error {
	_, err := s.q.ExecContext(ctx, `INSERT OR REPLACE INTO leases (thread, holder, token, gen, ttl_ms) VALUES (?, ?, ?, ?, ?)`,
		s.c.thread, next.Holder, next.Token, next.Gen, next.TTL.Milliseconds())
	return err
}

func (s step) Last(ctx context.Context) (int64, error) {
	var last int64
	err := s.q.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE thread = ?`, s.c.thread).Scan(&last)
	return last, err
}

// Insert always writes: the transaction holds the file's write lock.
func (s step) Insert(ctx context.Context, seq int64, event []byte) (bool, error) {
	_, err := s.q.ExecContext(ctx, `INSERT INTO events (thread, seq, event) VALUES (?, ?, ?)`, s.c.thread, seq, string(event))
	return err == nil, err
}

func (s step) Holds(ctx context.Context, seq int64, event []byte) (bool, error) {
	var had []byte
	if err := s.q.QueryRowContext(ctx, `SELECT event FROM events WHERE thread = ? AND seq = ?`, s.c.thread, seq).Scan(&had); err != nil {
		return false, err
	}
	return bytes.Equal(had, event), nil
}

func (s step) Meta(ctx context.Context, name string) ([]byte, bool, error) {
	var data []byte
	err := s.q.QueryRowContext(ctx, `SELECT data FROM meta WHERE thread = ? AND name = ?`, s.c.thread, name).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// PutMeta writes the row whether there was one or not.
func (s step) PutMeta(ctx context.Context, name string, data []byte, _ bool) error {
	if data == nil {
		data = []byte{}
	}
	_, err := s.q.ExecContext(ctx, `INSERT OR REPLACE INTO meta (thread, name, data) VALUES (?, ?, ?)`, s.c.thread, name, data)
	return err
}
