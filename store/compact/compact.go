package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/disk"
)

var (
	_ store.Conversation = (*Conversation)(nil)
	_ store.Deferred     = (*Conversation)(nil)
)

// Tuning, not part of the format.
const (
	probeSize = 4 << 10  // one read of events.zst while walking it by headers
	keepBuf   = 64 << 10 // a buffer bigger than this is dropped after the call
)

// Options are a conversation's optional settings. The zero value is the
// default.
type Options struct {
	// Synced, if set, is called after each fdatasync with how long it
	// took, to feed a histogram. It runs under the writers' lock.
	Synced func(time.Duration)

	// Folded, if set, is called after each fold, or each fold that failed
	// after its event was appended, with what it did.
	Folded func(FoldStats)

	// Unsynced, if set, makes Append return without fdatasync: what it
	// wrote is durable only once Sync returns. For writing a conversation
	// in a folder nobody reads yet (lnk agent chat convert), never for a
	// live one.
	Unsynced bool

	// FS is the filesystem the conversation's files are on; nil is the
	// real one, disk.OS. A test stands a crashable or failing one here.
	FS disk.FS
}

// Conversation is one conversation kept compact: events.zst and the tail
// events.jsonl in its folder (see the package documentation).
//
// A Conversation is for one goroutine at a time, as store.Conversation
// says; the fn given to Read must not call the same Conversation. Any
// number of Conversations on one folder, in this process or others, may be
// used at once: they share the tail's flock. Use Open; the zero value is not
// usable.
//
// Between calls it holds at most its two open files and buffers of up to
// 64 KiB each; Close lets go of them, after which the Conversation may be
// used again. Encoders and decoders are the process's, never its own.
type Conversation struct {
	dir    string
	tail   string // the folder's events.jsonl
	frames string // the folder's events.zst
	opts   Options
	fs     disk.FS // opts.FS, or disk.OS

	// tf is the open tail, zf the open frames, or nil; each writable says
	// it was opened for writing.
	tf, zf disk.File
	tw, zw bool

	syncs syncState // what the next sync owes, and what the last did

	foldEvents   int  // FoldEvents, but for tests
	sawDuplicate bool // the last snapshot found framed events in the tail, for tests
	decoded      int  // frames decompressed, for tests

	// Sources reused by every call, so none is made on the heap.
	fsrc fileSource
	bsrc bytesSource

	buf buffers
}

// syncState is what the syncs of a Conversation owe and left: the appends
// and Commit set it, sync and syncOrCut (disk.go) pay it.
type syncState struct {
	// from is where the tail's lines this Conversation appended deferred,
	// and not yet synced, start, and first the seq of the first; from is
	// -1 when there are none. mark is the Committer's, taken before the
	// first of them was written.
	from  int64
	first int64
	mark  uint64

	stale bool // an fdatasync failed: drop the files after the lock
	dirty bool // Unsynced: written since the last Sync
}

// buffers are reused by every call; what a call hands out points into
// them. Between calls none is over keepBuf (trim), and Close drops them.
type buffers struct {
	tail  []byte // the tail
	zst   []byte // bytes of events.zst read by headers
	frame []byte // one data frame
	plain []byte // one data frame, decompressed
}

// trim drops buffers grown for long events or large frames.
func (b *buffers) trim() {
	for _, p := range [...]*[]byte{&b.tail, &b.zst, &b.frame, &b.plain} {
		if cap(*p) > keepBuf {
			*p = nil
		}
	}
}

// Open returns the conversation kept in dir, which the caller has created.
// Opening creates nothing and opens nothing: the first Append creates the
// files and makes their names and the folder's durable.
func Open(dir string) (*Conversation, error) { return OpenOptions(dir, Options{}) }

// OpenOptions is Open with options.
func OpenOptions(dir string, opts Options) (*Conversation, error) {
	if dir == "" {
		return nil, errors.New("compact: open: no folder given")
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = disk.OS
	}
	return &Conversation{
		dir:        dir,
		tail:       filepath.Join(dir, TailName),
		frames:     filepath.Join(dir, FramesName),
		opts:       opts,
		fs:         fsys,
		foldEvents: FoldEvents,
		syncs:      syncState{from: -1},
	}, nil
}

// KeepsNoCopy says a compact conversation keeps no copy for people
// (chat.md) beside it: the copy would take most of what compression saves.
func (c *Conversation) KeepsNoCopy() bool { return true }

// Close closes the files and drops the buffers. An Unsynced conversation
// is synced first.
func (c *Conversation) Close() error {
	var err error
	if c.syncs.dirty {
		err = c.Sync()
	}
	c.buf = buffers{}
	for _, f := range [...]disk.File{c.tf, c.zf} {
		if f != nil {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("compact: close %s: %w", f.Name(), cerr)
			}
		}
	}
	c.tf, c.zf, c.tw, c.zw = nil, nil, false, false
	return err
}

// Sync makes everything appended durable: for an Unsynced conversation,
// whose appends are not.
func (c *Conversation) Sync() error {
	if !c.syncs.dirty {
		return nil
	}
	for _, f := range [...]disk.File{c.tf, c.zf} {
		if f != nil {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("compact: fdatasync %s: %w", f.Name(), err)
			}
		}
	}
	if err := c.syncDir(); err != nil {
		return err
	}
	c.syncs.dirty = false
	return nil
}

// openTail opens the tail if it is not open already, for writing if write
// is set, creating it then. It reports false when there is no tail: no
// file (err nil), or an error.
func (c *Conversation) openTail(write bool) (bool, error) {
	return c.reopen(&c.tf, &c.tw, c.tail, write)
}

// openFrames opens events.zst like openTail opens the tail.
func (c *Conversation) openFrames(write bool) (bool, error) {
	return c.reopen(&c.zf, &c.zw, c.frames, write)
}

// reopen opens the file at path into *f, and says in *writable whether it
// is for writing, unless *f is open already as write needs.
func (c *Conversation) reopen(f *disk.File, writable *bool, path string, write bool) (bool, error) {
	if *f != nil && (*writable || !write) {
		return true, nil
	}
	nf, err := c.openFile(path, write)
	if nf == nil {
		return false, err
	}
	if *f != nil {
		(*f).Close()
	}
	*f, *writable = nf, write
	return true, nil
}

func (c *Conversation) openFile(path string, write bool) (disk.File, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := c.fs.OpenFile(path, flag, FileMode)
	if err != nil {
		if !write && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("compact: %w", err)
	}
	return f, nil
}

// drop closes both files after an error that leaves their state unknown
// (a failed fdatasync), so the next call starts from fresh descriptors.
func (c *Conversation) drop() {
	for _, f := range [...]disk.File{c.tf, c.zf} {
		if f != nil {
			f.Close()
		}
	}
	c.tf, c.zf, c.tw, c.zw = nil, nil, false, false
}

func grow(b *[]byte, n int) []byte {
	if cap(*b) < n {
		*b = make([]byte, n, max(n, 4<<10))
	}
	return (*b)[:n]
}

// size returns f's size.
func size(f disk.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("compact: %w", err)
	}
	return st.Size, nil
}

// readAt fills b from f at off; io.ErrUnexpectedEOF if f ends first.
func readAt(f disk.File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == io.EOF {
		return fmt.Errorf("compact: read %s at offset %d: %w", f.Name(), off, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("compact: read %s at offset %d: %w", f.Name(), off, err)
}

// CorruptError says where a compact conversation is damaged other than by
// a torn final line or a unit cut short. It wraps store.ErrCorrupt.
type CorruptError struct {
	Path    string
	Offset  int64
	Problem string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("compact: %s at offset %d: %v: %s", e.Path, e.Offset, store.ErrCorrupt, e.Problem)
}

func (e *CorruptError) Unwrap() error { return store.ErrCorrupt }

// corrupt turns a formatError from reading events.zst into a CorruptError.
func (c *Conversation) corrupt(err error) error {
	var fe *formatError
	if errors.As(err, &fe) {
		return &CorruptError{Path: c.frames, Offset: fe.off, Problem: fe.problem}
	}
	return err
}

func (c *Conversation) corruptTail(off int64, format string, args ...any) error {
	return &CorruptError{Path: c.tail, Offset: off, Problem: fmt.Sprintf(format, args...)}
}

// threadJSON is the thread frame's payload.
type threadJSON struct {
	Thread string `json:"thread"`
}

func appendThreadJSON(dst []byte, thread string) []byte {
	b, _ := json.Marshal(threadJSON{Thread: thread}) // a string always marshals
	return append(dst, b...)
}

// Thread returns the whole thread name the conversation's thread frame
// keeps, or "" when it has none yet.
func (c *Conversation) Thread() (string, error) {
	if ok, err := c.openFrames(false); !ok {
		return "", err
	}
	s := &c.fsrc
	*s = fileSource{c: c}
	if err := s.init(); err != nil {
		return "", err
	}
	_, payload, err := readThreadFrame(s)
	if err == errCut {
		return "", nil
	}
	if err != nil {
		return "", c.corrupt(err)
	}
	var t threadJSON
	if err := json.Unmarshal(payload, &t); err != nil {
		return "", &CorruptError{Path: c.frames, Offset: 8, Problem: "the thread frame is not {\"thread\":…}: " + err.Error()}
	}
	return t.Thread, nil
}

// lockError says what went wrong taking the lock.
func (c *Conversation) lockError(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return fmt.Errorf("compact: waiting for the lock on %s: %w", c.tail, err)
	}
	return fmt.Errorf("compact: lock %s: %w", c.tail, err)
}
