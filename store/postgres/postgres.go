package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// URLEnv is the environment variable lnk-postgres reads its connection
// from: a postgres:// URL or a key=value DSN, as libpq takes them. When it
// is empty, the PG* variables (PGHOST, PGUSER, …) say where to connect.
const URLEnv = "LNK_POSTGRES_URL"

// MaxConns is the most connections a Driver opens at once; idle ones
// close after MaxConnIdle, so an idle agent holds none.
const (
	MaxConns    = 4
	MaxConnIdle = time.Minute
)

// maxTries is how many times a transaction aborted by a serialization
// failure or a deadlock is run, the first included.
const maxTries = 10

// schema makes the tables; part of the format (see doc.go).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS lnk_events (
		agent TEXT NOT NULL,
		thread TEXT NOT NULL,
		seq INT8 NOT NULL,
		event BYTEA NOT NULL,
		PRIMARY KEY (agent, thread, seq)
	)`,
	`CREATE TABLE IF NOT EXISTS lnk_leases (
		agent TEXT NOT NULL,
		thread TEXT NOT NULL,
		holder TEXT NOT NULL,
		token INT8 NOT NULL,
		ttl_ms INT8 NOT NULL,
		gen INT8 NOT NULL,
		PRIMARY KEY (agent, thread)
	)`,
	`CREATE TABLE IF NOT EXISTS lnk_meta (
		agent TEXT NOT NULL,
		thread TEXT NOT NULL,
		name TEXT NOT NULL,
		data BYTEA NOT NULL,
		PRIMARY KEY (agent, thread, name)
	)`,
}

// errRace says a transaction's first insert found a row another made
// meanwhile: the transaction is run again, and then reads that row.
var errRace = errors.New("postgres: a row made meanwhile")

// Driver keeps one agent's conversations in a database other agents may
// share. It is safe for concurrent use, and so are its Conversations; other
// processes may use the same database and agent at once. Use Open; the zero
// value is not usable.
type Driver struct {
	pool  *pgxpool.Pool
	agent string

	// watch times other holders' leases on this process's clock.
	watch lease.Watch
}

// Open connects to the database url names (see URLEnv) as agent, making the
// tables when they are not there. The agent is the key every row of its
// conversations carries: the agent's name.
func Open(ctx context.Context, url, agent string) (*Driver, error) {
	if err := key("agent", agent); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: the connection string: %w", err)
	}
	cfg.MaxConns = MaxConns
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = MaxConnIdle
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	d := &Driver{pool: pool, agent: agent}
	if err := d.makeTables(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

// makeTables makes the tables that are not there. PostgreSQL's CREATE
// TABLE IF NOT EXISTS can still fail when another connection makes the same
// table at the same moment (a unique violation in its catalog, the table
// there already, or its row type there already), so that is tried again,
// once the other has finished.
func (d *Driver) makeTables(ctx context.Context) error {
	for _, sql := range schema {
		var err error
		for try := 0; try < 3; try++ {
			if _, err = d.pool.Exec(ctx, sql); !isCode(err, "23505", "42P07", "42710") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("postgres: make the tables: %w", err)
		}
	}
	return nil
}

// key says what is wrong with an agent or thread key, if anything: a
// TEXT column takes only valid UTF-8.
func key(what, k string) error {
	if what == "thread" {
		if err := rules.Thread(k); err != nil {
			return err
		}
	} else if k == "" || len(k) > rules.MaxThreadBytes {
		return fmt.Errorf("%w: %s key of %d bytes, not 1 to %d", store.ErrBadName, what, len(k), rules.MaxThreadBytes)
	}
	if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
		return fmt.Errorf("%w: %s key %q is not UTF-8 text", store.ErrBadName, what, k)
	}
	return nil
}

func isCode(err error, codes ...string) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	for _, c := range codes {
		if pe.Code == c {
			return true
		}
	}
	return false
}

// Open returns thread's conversation; it reads nothing.
func (d *Driver) Open(thread string) (store.Conversation, error) {
	if err := key("thread", thread); err != nil {
		return nil, fmt.Errorf("postgres: agent %q: %w", d.agent, err)
	}
	return &Conversation{d: d, thread: thread}, nil
}

// Close closes the driver's connections, waiting for calls under way.
func (d *Driver) Close() error {
	d.pool.Close()
	return nil
}

// Threads lists the threads with events, stepping from one to the next in
// the primary key, so it costs a seek per thread, not a read per event.
// The key's order is the database's collation; the list is sorted by bytes
// here.
func (d *Driver) Threads(ctx context.Context) ([]string, error) {
	var threads []string
	after := ""
	for {
		var th string
		err := d.pool.QueryRow(ctx, `SELECT thread FROM lnk_events WHERE agent = $1 AND thread > $2 ORDER BY thread LIMIT 1`, d.agent, after).Scan(&th)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: agent %q: threads: %w", d.agent, err)
		}
		threads = append(threads, th)
		after = th
	}
	slices.Sort(threads)
	if threads == nil {
		threads = []string{}
	}
	return threads, nil
}

// tx runs fn in a transaction and commits it, running it again from the
// start when the database aborts it as a serialization failure (40001,
// CockroachDB's answer to two conflicting transactions), a deadlock
// (40P01), or fn says errRace.
func (d *Driver) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	wait := time.Millisecond
	for try := 1; ; try++ {
		err := pgx.BeginFunc(ctx, d.pool, fn)
		if err == nil || try == maxTries || !(errors.Is(err, errRace) || isCode(err, "40001", "40P01")) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// Conversation is one thread's conversation. It holds nothing open between
// calls and is safe for concurrent use.
type Conversation struct {
	d      *Driver
	thread string
}

func (c *Conversation) errorf(format string, args ...any) error {
	return fmt.Errorf("postgres: agent %q, thread %q: "+format, append([]any{c.d.agent, c.thread}, args...)...)
}

// Last returns the highest seq written, or 0: one seek to the end of the
// conversation's range of the primary key.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	last, err := step{c: c, q: c.d.pool}.Last(ctx)
	if err != nil {
		return 0, c.errorf("last: %w", err)
	}
	return last, nil
}

// Append appends with no lease token.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.AppendLeased(ctx, seq, event, 0)
}

// AppendLeased writes event as seq in one transaction: the lease row read
// FOR UPDATE and its token checked, the last seq read, then the insert; a
// seq already there is compared byte for byte (rows.Append).
func (c *Conversation) AppendLeased(ctx context.Context, seq int64, event []byte, token int64) error {
	if err := rules.Event(seq, event); err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	err := c.d.tx(ctx, func(tx pgx.Tx) error {
		return rows.Append(ctx, c.in(tx), c.thread, seq, event, token)
	})
	if err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	return nil
}

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
	err := c.d.tx(ctx, func(tx pgx.Tx) (err error) {
		token, ranOut, err = rows.Take(ctx, c.in(tx), &c.d.watch, c.thread, holder, ttl)
		return err
	})
	if err != nil {
		return 0, "", c.errorf("lease: %w", err)
	}
	return token, ranOut, nil
}

// Release lets the lease of token go, keeping its token in the row.
func (c *Conversation) Release(ctx context.Context, token int64) error {
	err := c.d.tx(ctx, func(tx pgx.Tx) error { return rows.Release(ctx, c.in(tx), c.thread, token) })
	if err != nil {
		return c.errorf("release: %w", err)
	}
	return nil
}

// Close does nothing: a Conversation holds nothing open.
func (c *Conversation) Close() error { return nil }

// MetaGet returns the side datum name, or store.ErrNotFound.
func (c *Conversation) MetaGet(ctx context.Context, name string) ([]byte, error) {
	data, err := rows.Get(ctx, step{c: c, q: c.d.pool}, name)
	if err != nil {
		return nil, c.errorf("%w", err)
	}
	return data, nil
}

// MetaPut sets the side datum name in one statement.
func (c *Conversation) MetaPut(ctx context.Context, name string, data []byte) error {
	if err := rules.Datum(name, data); err != nil {
		return c.errorf("%w", err)
	}
	if data == nil {
		data = []byte{}
	}
	_, err := c.d.pool.Exec(ctx, `INSERT INTO lnk_meta (agent, thread, name, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (agent, thread, name) DO UPDATE SET data = excluded.data`, c.d.agent, c.thread, name, data)
	if err != nil {
		return c.errorf("put side datum %q: %w", name, err)
	}
	return nil
}

// MetaDelete removes the side datum name.
func (c *Conversation) MetaDelete(ctx context.Context, name string) error {
	if err := rules.Name(name); err != nil {
		return c.errorf("%w", err)
	}
	_, err := c.d.pool.Exec(ctx, `DELETE FROM lnk_meta WHERE agent = $1 AND thread = $2 AND name = $3`, c.d.agent, c.thread, name)
	if err != nil {
		return c.errorf("delete side datum %q: %w", name, err)
	}
	return nil
}

// Forget deletes the conversation's events and side data in one
// transaction; its lease row stays, so its tokens keep growing.
func (c *Conversation) Forget(ctx context.Context) error {
	err := c.d.tx(ctx, func(tx pgx.Tx) error {
		for _, table := range []string{"lnk_events", "lnk_meta"} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE agent = $1 AND thread = $2", c.d.agent, c.thread); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return c.errorf("forget: %w", err)
	}
	return nil
}

// NarrowTools narrows the tool list in one transaction, the list's row
// read FOR UPDATE.
func (c *Conversation) NarrowTools(ctx context.Context, tools []string) ([]string, error) {
	var kept []string
	err := c.d.tx(ctx, func(tx pgx.Tx) (err error) {
		kept, err = rows.Narrow(ctx, c.in(tx), tools)
		return err
	})
	if err != nil {
		return nil, c.errorf("narrow tools: %w", err)
	}
	return kept, nil
}

// step is a conversation's reads and writes (rows.Step) through q: a
// transaction (tx set), or the pool for a read alone.
type step struct {
	c *Conversation
	q interface {
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
	tx bool
}

// in is the conversation's step in transaction tx.
func (c *Conversation) in(tx pgx.Tx) step { return step{c: c, q: tx, tx: true} }

// Lease reads the lease row FOR UPDATE, so it is not changed before the
// transaction ends; no row is the zero Record.
func (s step) Lease(ctx context.Context) (lease.Record, error) {
	var r lease.Record
	var ttl int64
	err := s.q.QueryRow(ctx, `SELECT holder, token, gen, ttl_ms FROM lnk_leases WHERE agent = $1 AND thread = $2 FOR UPDATE`,
		s.c.d.agent, s.c.thread).Scan(&r.Holder, &r.Token, &r.Gen, &ttl)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Record{}, nil
	}
	r.TTL = time.Duration(ttl) * time.Millisecond
	return r, err
}

// PutLease writes next over cur: an update of the locked row, or, when
// there was none, an insert that is errRace if another made the row
// meanwhile.
func (s step) PutLease(ctx context.Context, cur, next lease.Record) error {
	if cur.Gen == 0 {
		tag, err := s.q.Exec(ctx, `INSERT INTO lnk_leases (agent, thread, holder, token, ttl_ms, gen) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
			s.c.d.agent, s.c.thread, next.Holder, next.Token, next.TTL.Milliseconds(), next.Gen)
		if err == nil && tag.RowsAffected() == 0 {
			return errRace
		}
		return err
	}
	_, err := s.q.Exec(ctx, `UPDATE lnk_leases SET holder = $3, token = $4, ttl_ms = $5, gen = $6 WHERE agent = $1 AND thread = $2`,
		s.c.d.agent, s.c.thread, next.Holder, next.Token, next.TTL.Milliseconds(), next.Gen)
	return err
}

func (s step) Last(ctx context.Context) (int64, error) {
	var last int64
	err := s.q.QueryRow(ctx, `SELECT seq FROM lnk_events WHERE agent = $1 AND thread = $2 ORDER BY seq DESC LIMIT 1`, s.c.d.agent, s.c.thread).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return last, err
}

// Insert writes nothing when another wrote seq since the last was read.
func (s step) Insert(ctx context.Context, seq int64, event []byte) (bool, error) {
	tag, err := s.q.Exec(ctx, `INSERT INTO lnk_events (agent, thread, seq, event) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		s.c.d.agent, s.c.thread, seq, event)
	return err == nil && tag.RowsAffected() == 1, err
}

// Holds compares in the database, so the event is not sent back.
func (s step) Holds(ctx context.Context, seq int64, event []byte) (bool, error) {
	var same bool
	err := s.q.QueryRow(ctx, `SELECT event = $4 FROM lnk_events WHERE agent = $1 AND thread = $2 AND seq = $3`,
		s.c.d.agent, s.c.thread, seq, event).Scan(&same)
	return same, err
}

const (
	metaSQL       = `SELECT data FROM lnk_meta WHERE agent = $1 AND thread = $2 AND name = $3`
	metaLockedSQL = metaSQL + ` FOR UPDATE`
)

// Meta reads the datum's row, FOR UPDATE in a transaction; an empty one is
// never nil.
func (s step) Meta(ctx context.Context, name string) ([]byte, bool, error) {
	query := metaSQL
	if s.tx {
		query = metaLockedSQL
	}
	var data []byte
	err := s.q.QueryRow(ctx, query, s.c.d.agent, s.c.thread, name).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, true, nil
}

// PutMeta updates the row Meta found, or inserts one, which is errRace if
// another made it meanwhile.
func (s step) PutMeta(ctx context.Context, name string, data []byte, found bool) error {
	if found {
		_, err := s.q.Exec(ctx, `UPDATE lnk_meta SET data = $4 WHERE agent = $1 AND thread = $2 AND name = $3`,
			s.c.d.agent, s.c.thread, name, data)
		return err
	}
	tag, err := s.q.Exec(ctx, `INSERT INTO lnk_meta (agent, thread, name, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
		s.c.d.agent, s.c.thread, name, data)
	if err == nil && tag.RowsAffected() == 0 {
		return errRace
	}
	return err
}
