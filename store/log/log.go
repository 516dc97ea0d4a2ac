package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/disk"
)

var (
	_ store.Conversation = (*Conversation)(nil)
	_ store.Holder       = (*Conversation)(nil) // and so store.Deferred
)

// Tuning, not part of the format.
const (
	chunkSize = 32 << 10 // one read of a scan: the last 32 typical events fit in one
	tailSize  = 4 << 10  // Last's and Append's first read of the end: one typical event fits
	probeSize = 4 << 10  // one read of the bisection that finds a seq
	keepBuf   = 64 << 10 // a buffer bigger than this is dropped after the call
	backScan  = 64       // a seq this close to the end is found by scanning back, not by bisection
)

// Options are a conversation's optional settings. The zero value is the
// default.
type Options struct {
	// FS is the filesystem the log is kept on; nil is the real one. Tests
	// stand a crashable one in its place.
	FS disk.FS

	// Synced, if set, is called after each fdatasync of the log with how long
	// it took, to feed a histogram. It runs while the writers' lock is held,
	// so it must be quick.
	Synced func(time.Duration)
}

// Conversation is one conversation kept as a log: the file events.jsonl in
// its folder (see the package documentation for the format).
//
// A Conversation is for one goroutine at a time, as store.Conversation says;
// the fn given to Read must not call the same Conversation. Any number of
// Conversations on the same folder, in this process or in others, may be
// used at once: writers take a lock on the file, and readers need none.
// Use Open to get one; the zero value is not usable.
//
// Between calls it holds at most an open file and, after a long line, a
// buffer of up to 64 KiB; its read buffer is a call's alone. Close lets go
// of both, after which the Conversation may be used again and opens the
// file again when it needs it.
type Conversation struct {
	path string // the folder's events.jsonl
	dir  string
	fs   disk.FS
	opts Options

	// f is the open log, or nil. writable says f was opened for writing.
	f        disk.File
	writable bool

	// held says f holds the writers' lock between calls: lines appended
	// deferred, from offset from on, wait for their fdatasync. from is
	// -1 when no line of this Conversation waits. mark is the
	// Committer's, taken with the lock.
	held bool
	from int64
	mark uint64

	// tip is the end as this Conversation last found or wrote it, and
	// last its line, so the end is read again only once the file changed.
	tip  tip
	last []byte

	// chunk is the read buffer of chunkSize a call takes from chunks and
	// gives back when it ends (trim), and buf a larger one for a long
	// line, kept up to keepBuf; what a call hands out points into them.
	chunk *[]byte
	buf   []byte
}

// chunks are the read buffers of every Conversation in the process: one
// is held only during a call, so a Conversation waiting between calls (a
// turn waiting for its model) holds none, and the calls running at once
// share what they need.
var chunks = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// tip is the end of the log as a Conversation last found or wrote it.
type tip struct {
	end  int64 // just past the last '\n'
	last int64 // the last line's seq
	off  int64 // where the last line starts
	// ok says this Conversation wrote the end under the lock it holds, or
	// read it under the lock (Hold): nobody else changes it until the
	// lock is let go.
	ok bool
	// stamp is the file's size and change stamp when the end was read;
	// zero when not known (after a write of this Conversation's).
	stamp disk.Info
	// synced says this Conversation wrote the end and made it durable:
	// while the file is end bytes long, it ends there still. Only a cut
	// makes a log shorter, and the log's writers cut only what is past
	// its last durable line (a torn line, lines whose fdatasync failed),
	// so a file of the same size holds the same lines; a longer one was
	// appended to. The next call after the lock is let go then makes one
	// fstat, not a read of the end.
	synced bool
}

// Open returns the conversation kept in dir, which the caller has created.
// Opening creates nothing and opens nothing: a folder without events.jsonl
// is an empty conversation, and the first Append creates the file and,
// before its first line, makes the file's name and the folder's durable.
func Open(dir string) (*Conversation, error) {
	return OpenOptions(dir, Options{})
}

// OpenOptions is Open with options.
func OpenOptions(dir string, opts Options) (*Conversation, error) {
	if dir == "" {
		return nil, errors.New("log: open: no folder given")
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = disk.OS
	}
	return &Conversation{path: filepath.Join(dir, FileName), dir: dir, fs: fsys, opts: opts, from: -1}, nil
}

// Last returns the seq of the last complete line, or 0 when there is none.
// It reads the end of the file only.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if ok, err := c.open(false); !ok {
		return 0, err
	}
	defer c.trim()
	e, err := c.readEnd(ctx, tailSize, false)
	if err != nil {
		return 0, err
	}
	return e.last, nil
}

// Close closes the file and drops the buffer. Lines appended deferred
// and not yet committed are left as they are: written, not durable.
func (c *Conversation) Close() error {
	c.trim()
	c.buf, c.last = nil, nil
	c.held, c.from, c.tip = false, -1, tip{}
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f, c.writable = nil, false
	if err != nil {
		return fmt.Errorf("log: close %s: %w", c.path, err)
	}
	return nil
}

// open opens the log if it is not open already, creating it if write is
// set. It opens it for writing whenever it can, so the reads of a turn
// and its appends share one descriptor; read-only when it may not write.
// It reports false when there is nothing to read: no file (err nil), or
// an error.
func (c *Conversation) open(write bool) (bool, error) {
	if c.f != nil && (c.writable || !write) {
		return true, nil
	}
	flag := os.O_RDWR
	if write {
		flag |= os.O_CREATE
	}
	f, err := c.fs.OpenFile(c.path, flag, FileMode)
	writable := err == nil
	if !write && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		f, err = c.fs.OpenFile(c.path, os.O_RDONLY, FileMode)
	}
	if err != nil {
		if !write && errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("log: %w", err)
	}
	if c.f != nil {
		c.f.Close()
	}
	c.f, c.writable = f, writable
	return true, nil
}

// drop closes the file after an error that leaves its state unknown (a
// failed fdatasync), so the next call starts from a fresh descriptor. The
// writers' lock goes with it.
func (c *Conversation) drop() {
	if c.f != nil {
		c.f.Close()
		c.f, c.writable = nil, false
	}
	c.held, c.from, c.tip = false, -1, tip{}
}

// grow returns a buffer of n bytes: the call's chunk, or for a long line
// the larger buffer, reused when it is big enough.
func (c *Conversation) grow(n int) []byte {
	if n <= chunkSize {
		if c.chunk == nil {
			c.chunk = chunks.Get().(*[]byte)
		}
		return (*c.chunk)[:n]
	}
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	return c.buf[:n]
}

// trim gives the call's chunk back and drops a buffer grown for a long
// line, so a conversation between calls holds little.
func (c *Conversation) trim() {
	if c.chunk != nil {
		chunks.Put(c.chunk)
		c.chunk = nil
	}
	if cap(c.buf) > keepBuf {
		c.buf = nil
	}
	if cap(c.last) > keepBuf {
		// The end is read again, under the writers' lock too: a turn
		// holding it between its message and its answer holds no copy
		// of a long line while it waits for the model.
		c.last, c.tip = nil, tip{}
	}
}

// stat returns the file's size and change stamp.
func (c *Conversation) stat() (disk.Info, error) {
	st, err := c.f.Stat()
	if err != nil {
		return st, fmt.Errorf("log: %w", err)
	}
	return st, nil
}

// errShrunk says a read came short: the file was cut while it was read.
var errShrunk = errors.New("log: file shrank while read")

// readAt fills b from off.
func (c *Conversation) readAt(b []byte, off int64) error {
	n, err := c.f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == io.EOF {
		return errShrunk
	}
	return fmt.Errorf("log: read %s at offset %d: %w", c.path, off, err)
}

// CorruptError says where a log is damaged other than by a torn final line.
// It wraps store.ErrCorrupt.
type CorruptError struct {
	Path    string
	Offset  int64 // where the damaged line starts
	Problem string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("log: %s at offset %d: %v: %s", e.Path, e.Offset, store.ErrCorrupt, e.Problem)
}

func (e *CorruptError) Unwrap() error { return store.ErrCorrupt }

func (c *Conversation) corrupt(off int64, format string, args ...any) error {
	return &CorruptError{Path: c.path, Offset: off, Problem: fmt.Sprintf(format, args...)}
}
