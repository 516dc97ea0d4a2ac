package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

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

// DirName is the database's folder in the agent's chats folder; part of
// the format.
const DirName = "events.pebble"

// Key prefixes; part of the format.
const (
	eventPrefix = 'e'
	leasePrefix = 'l'
	metaPrefix  = 'm'
)

// Driver keeps an agent's conversations in one pebble database. It is safe
// for concurrent use, and so are its Conversations. Use Open; the zero value
// is not usable.
type Driver struct {
	db     *pebble.DB
	dir    string
	closed sync.Once

	// watch times other holders' leases on this process's clock.
	watch lease.Watch

	// mu guards locks: a lock per conversation in use, with how many wait
	// for it or hold it, dropped when none does.
	mu    sync.Mutex
	locks map[string]*convLock
}

type convLock struct {
	sync.Mutex
	users int
}

// Open opens the database in folder dir, making it when it is not there.
// The folder and what it holds are their owner's alone (0700 and 0600),
// pebble making the folder, so that its parent is synced; a folder made
// before with a wider mode is given 0700 where it can be.
func Open(dir string) (*Driver, error) {
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		os.Chmod(dir, fi.Mode().Perm()&^0o077) // as far as it goes: the database is read either way
	}
	opts := &pebble.Options{Logger: quiet{}, FS: privateFS{vfs.Default}}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	return &Driver{db: db, dir: dir, locks: make(map[string]*convLock)}, nil
}

func (d *Driver) errorf(format string, args ...any) error {
	return fmt.Errorf("pebble: %s: "+format, append([]any{d.dir}, args...)...)
}

// Open returns thread's conversation; it reads nothing.
func (d *Driver) Open(thread string) (store.Conversation, error) {
	if err := rules.Thread(thread); err != nil {
		return nil, d.errorf("%w", err)
	}
	return &Conversation{d: d, thread: thread}, nil
}

// Close closes the database; closing it again does nothing.
func (d *Driver) Close() error {
	var err error
	d.closed.Do(func() { err = d.db.Close() })
	if err != nil {
		return d.errorf("close: %w", err)
	}
	return nil
}

// lock takes thread's lock and returns what lets it go.
func (d *Driver) lock(thread string) func() {
	d.mu.Lock()
	l := d.locks[thread]
	if l == nil {
		l = &convLock{}
		d.locks[thread] = l
	}
	l.users++
	d.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		d.mu.Lock()
		if l.users--; l.users == 0 {
			delete(d.locks, thread)
		}
		d.mu.Unlock()
	}
}

// Threads lists the threads with events, seeking past each thread's range
// to the next.
func (d *Driver) Threads(ctx context.Context) ([]string, error) {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: []byte{eventPrefix}, UpperBound: []byte{eventPrefix + 1}})
	if err != nil {
		return nil, d.errorf("threads: %w", err)
	}
	defer it.Close()
	threads := []string{}
	for ok := it.First(); ok; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k := it.Key()
		i := bytes.IndexByte(k, 0)
		if i < 1 {
			return nil, d.errorf("%w: key %q", store.ErrCorrupt, k)
		}
		th := string(k[1:i])
		threads = append(threads, th)
		ok = it.SeekGE(append([]byte{eventPrefix}, append([]byte(th), 1)...))
	}
	if err := it.Error(); err != nil {
		return nil, d.errorf("threads: %w", err)
	}
	return threads, nil
}

// Conversation is one thread's conversation in the database. It holds
// nothing open between calls and is safe for concurrent use.
type Conversation struct {
	d      *Driver
	thread string
}

func (c *Conversation) errorf(format string, args ...any) error {
	return c.d.errorf("thread %q: "+format, append([]any{c.thread}, args...)...)
}

// eventKey appends the key of seq to dst.
func (c *Conversation) eventKey(dst []byte, seq int64) []byte {
	dst = append(dst, eventPrefix)
	dst = append(dst, c.thread...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, uint64(seq))
}

// events returns an iterator over the conversation's events.
func (c *Conversation) events() (*pebble.Iterator, error) {
	lo := append(append([]byte{eventPrefix}, c.thread...), 0)
	hi := append(append([]byte{eventPrefix}, c.thread...), 1)
	return c.d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
}

func seqOfKey(k []byte) int64 {
	if len(k) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(k[len(k)-8:]))
}

// Last returns the highest seq written, or 0.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	it, err := c.events()
	if err != nil {
		return 0, c.errorf("last: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	return seqOfKey(it.Key()), nil
}

// Append appends with no lease token.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.AppendLeased(ctx, seq, event, 0)
}

// AppendLeased writes event as seq under the conversation's lock, after
// checking the lease, the last seq and, for a taken seq, its bytes
// (rows.Append).
func (c *Conversation) AppendLeased(ctx context.Context, seq int64, event []byte, token int64) error {
	if err := rules.Event(seq, event); err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.d.lock(c.thread)()
	if err := rows.Append(ctx, kv{c}, c.thread, seq, event, token); err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	return nil
}

// Read hands out the events from seq from, stepping the iterator as fn
// takes them.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error {
	it, err := c.events()
	if err != nil {
		return c.errorf("read from %d: %w", from, err)
	}
	defer it.Close()
	var ok bool
	switch {
	case reverse && (from <= 0 || from == math.MaxInt64):
		ok = it.Last()
	case reverse:
		ok = it.SeekLT(c.eventKey(nil, from+1))
	case from <= 0:
		if it.Last() {
			fn(seqOfKey(it.Key()), it.Value())
		}
		return it.Error()
	default:
		ok = it.SeekGE(c.eventKey(nil, from))
	}
	for ; ok; ok = step(it, reverse) {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return c.errorf("read: %w", err)
		}
		if !fn(seqOfKey(it.Key()), v) {
			return nil
		}
	}
	if err := it.Error(); err != nil {
		return c.errorf("read from %d: %w", from, err)
	}
	return nil
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// Close does nothing: a Conversation holds nothing open.
func (c *Conversation) Close() error { return nil }

// KeepsNoCopy says a conversation a driver keeps has no copy for people
// (chat.md) beside it: its folder keeps only its marker and what is not an
// event, and the copy is made from the events when one is asked for.
func (c *Conversation) KeepsNoCopy() bool { return true }

func (c *Conversation) leaseKey() []byte {
	return append([]byte{leasePrefix}, c.thread...)
}

func (c *Conversation) metaKey(name string) []byte {
	k := append([]byte{metaPrefix}, c.thread...)
	return append(append(k, 0), name...)
}

// Lease takes or renews the lease under the conversation's lock.
func (c *Conversation) Lease(ctx context.Context, holder string, ttl time.Duration) (int64, error) {
	token, _, err := c.LeaseFrom(ctx, holder, ttl)
	return token, err
}

// LeaseFrom is Lease, also saying whose lease ran out for it.
func (c *Conversation) LeaseFrom(ctx context.Context, holder string, ttl time.Duration) (int64, string, error) {
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	defer c.d.lock(c.thread)()
	token, ranOut, err := rows.Take(ctx, kv{c}, &c.d.watch, c.thread, holder, ttl)
	if err != nil {
		return 0, "", c.errorf("lease: %w", err)
	}
	return token, ranOut, nil
}

// Release lets the lease of token go.
func (c *Conversation) Release(ctx context.Context, token int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.d.lock(c.thread)()
	if err := rows.Release(ctx, kv{c}, c.thread, token); err != nil {
		return c.errorf("release: %w", err)
	}
	return nil
}

// MetaGet returns the side datum name, or store.ErrNotFound.
func (c *Conversation) MetaGet(ctx context.Context, name string) ([]byte, error) {
	data, err := rows.Get(ctx, kv{c}, name)
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
	defer c.d.lock(c.thread)()
	if err := (kv{c}).PutMeta(ctx, name, data, false); err != nil {
		return c.errorf("side datum %q: %w", name, err)
	}
	return nil
}

// MetaDelete removes the side datum name.
func (c *Conversation) MetaDelete(ctx context.Context, name string) error {
	if err := rules.Name(name); err != nil {
		return c.errorf("%w", err)
	}
	defer c.d.lock(c.thread)()
	if err := c.d.db.Delete(c.metaKey(name), pebble.Sync); err != nil {
		return c.errorf("side datum %q: %w", name, err)
	}
	return nil
}

// NarrowTools narrows the tool list under the conversation's lock.
func (c *Conversation) NarrowTools(ctx context.Context, tools []string) ([]string, error) {
	defer c.d.lock(c.thread)()
	kept, err := rows.Narrow(ctx, kv{c}, tools)
	if err != nil {
		return nil, c.errorf("narrow tools: %w", err)
	}
	return kept, nil
}

// kv is a conversation's reads and writes of its keys (rows.Step). One
// that writes holds the conversation's lock.
type kv struct{ c *Conversation }

// Lease reads the lease's record; none is the zero Record.
func (s kv) Lease(context.Context) (lease.Record, error) {
	v, closer, err := s.c.d.db.Get(s.c.leaseKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return lease.Record{}, nil
	}
	if err != nil {
		return lease.Record{}, err
	}
	defer closer.Close()
	var r lease.Record
	var n [3]uint64
	b := v
	for i := range n {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return lease.Record{}, fmt.Errorf("%w: lease record %q", store.ErrCorrupt, v)
		}
		n[i], b = x, b[k:]
	}
	r.Token, r.Gen, r.TTL = int64(n[0]), int64(n[1]), time.Duration(n[2])*time.Millisecond
	r.Holder = string(b)
	return r, nil
}

func (s kv) PutLease(_ context.Context, _, next lease.Record) error {
	v := binary.AppendUvarint(nil, uint64(next.Token))
	v = binary.AppendUvarint(v, uint64(next.Gen))
	v = binary.AppendUvarint(v, uint64(next.TTL.Milliseconds()))
	v = append(v, next.Holder...)
	return s.c.d.db.Set(s.c.leaseKey(), v, pebble.Sync)
}

func (s kv) Last(ctx context.Context) (int64, error) { return s.c.Last(ctx) }

// Insert always writes: the step holds the conversation's lock.
func (s kv) Insert(_ context.Context, seq int64, event []byte) (bool, error) {
	err := s.c.d.db.Set(s.c.eventKey(nil, seq), event, pebble.Sync)
	return err == nil, err
}

func (s kv) Holds(_ context.Context, seq int64, event []byte) (bool, error) {
	had, closer, err := s.c.d.db.Get(s.c.eventKey(nil, seq))
	if err != nil {
		return false, err
	}
	defer closer.Close()
	return bytes.Equal(had, event), nil
}

// Meta returns a copy of the datum's value.
func (s kv) Meta(_ context.Context, name string) ([]byte, bool, error) {
	v, closer, err := s.c.d.db.Get(s.c.metaKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return append([]byte{}, v...), true, nil
}

func (s kv) PutMeta(_ context.Context, name string, data []byte, _ bool) error {
	return s.c.d.db.Set(s.c.metaKey(name), data, pebble.Sync)
}

// Forget deletes the conversation's events and side data in one synced
// batch under the conversation's lock; its lease record stays, so its
// tokens keep growing.
func (c *Conversation) Forget(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer c.d.lock(c.thread)()
	b := c.d.db.NewBatch()
	defer b.Close()
	for _, p := range []byte{eventPrefix, metaPrefix} {
		lo := append(append([]byte{p}, c.thread...), 0)
		hi := append(append([]byte{p}, c.thread...), 1)
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return c.errorf("forget: %w", err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return c.errorf("forget: %w", err)
	}
	return nil
}

// quiet is pebble's logger: its notes are dropped, its errors go to
// standard error, and a fatal one ends the program as pebble expects.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quiet) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}
