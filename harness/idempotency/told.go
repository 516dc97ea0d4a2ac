package idempotency

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/internal/osfile"
	"lnk.dev/linkharness/store"
)

// An answer is told when its caller was given it, or it was kept for
// _link/recover. A process that dies between writing an answer and
// telling it leaves an answer nobody was told; the next turn of the
// conversation, in whatever process, finds it and hands it over, once.
//
// What was told is the highest seq told, in chats/<dir>/told, written as
// each answer is told (by the server, just before the reply goes: a caller
// whose reply is lost asks again by the message's id) over the file in
// place and not synced: a process's death keeps it (the kernel holds it),
// a machine's may lose the last few, which are then handed over once more
// rather than never. Answers a process has made and is telling are held
// in memory (Tellings), so its own next turn, which may begin before the
// telling is written, does not take them for a dead process's.
//
// It lived in the pending folder (chats/<dir>/pending/told) before, and is
// read from there while the conversation's folder has none: a new
// conversation's first turn so makes one file, not a folder and a file in
// it, which cost it more than its fdatasync.

// ToldName is the file of the highest seq told, in the conversation's
// folder, and in its pending folder as it was kept before.
const ToldName = "told"

// Tellings are the answers a process's turns gave and its caller has not
// yet marked told, by conversation folder. The zero value is ready to use;
// it is safe for concurrent use.
type Tellings struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]int64
}

// Rest lets go of the map once no answer waits to be marked told.
func (ts *Tellings) Rest() {
	ts.mu.Lock()
	if len(ts.m) == 0 {
		ts.m = nil
	}
	ts.mu.Unlock()
}

// Add records the answer at seq of the conversation in dir as given and
// not yet told.
func (ts *Tellings) Add(dir string, seq int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]int64{}
	}
	ts.m[dir] = max(ts.m[dir], seq)
}

// Done records that the answers through seq of the conversation in dir
// were told.
func (ts *Tellings) Done(dir string, seq int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m[dir] <= seq {
		delete(ts.m, dir)
	}
}

// Has says whether the answer at seq of the conversation in dir, or a
// later one, is being told.
func (ts *Tellings) Has(dir string, seq int64) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.m[dir] >= seq
}

// WriteTold writes seq as the highest told of the conversation in dir,
// unless it holds a higher one; not synced (see above).
//
// The file is written over in place, never made anew: creating a file and
// renaming it into place cost a turn more than its fdatasync did. It
// holds the seq twice, in 20 digits each (toldLine), so a reader that
// meets a write half done, which may have a new number's first digits
// before an old one's last, reads the two and keeps the lesser, which is
// never above what was told: an answer is handed over once more rather
// than never.
func WriteTold(dir string, seq int64) error {
	path := filepath.Join(dir, ToldName)
	fd, err := openMaking(dir, path, unix.O_RDWR|unix.O_CREAT)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = writeToldAt(fd, path, seq)
	return err
}

// openMaking opens the told file at path in the folder dir with flags,
// which create it, making the folder first where it is missing: a store
// that keeps no file there may not have made it.
func openMaking(dir, path string, flags int) (int, error) {
	fd, err := osfile.OpenFD(path, flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			fd, err = osfile.OpenFD(path, flags, 0o600)
		}
	}
	return fd, err
}

// writeToldAt is WriteTold on the told file open as fd: one read of a
// bare descriptor (a regular file's pread is short only at its end, and
// the file is never longer than maxTold but by damage), and the write.
// It returns what the file then says was told.
func writeToldAt(fd int, path string, seq int64) (int64, error) {
	var buf [maxTold + 1]byte
	n, err := osfile.Pread(fd, buf[:], 0)
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if told, err := parseTold(path, buf[:n]); err == nil && told >= seq && seq != 0 && n > 0 {
		return told, nil
	}
	return seq, pwriteTold(fd, path, seq)
}

// pwriteTold writes seq over the told file open as fd.
func pwriteTold(fd int, path string, seq int64) error {
	if _, err := osfile.Pwrite(fd, toldLine(seq), 0); err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// toldLine is what the told file holds for seq: the seq twice, each in 20
// digits, and a newline.
func toldLine(seq int64) []byte {
	b := make([]byte, 0, 42)
	b = fmt.Appendf(b, "%020d %020d\n", seq, seq)
	return b
}

// ReadTold reads the highest seq told from the conversation's folder dir,
// or while it has none from its pending folder pend, where it was kept
// before; 0 when none was.
func ReadTold(dir, pend string) (int64, error) {
	n, ok, err := ReadToldFile(filepath.Join(dir, ToldName))
	if !ok {
		n, _, err = ReadToldFile(filepath.Join(pend, ToldName))
	}
	return n, err
}

// maxTold is the longest told file: toldLine's 42 bytes, and room to
// spare; anything longer is damage.
const maxTold = 63

// ReadToldFile reads the told file at path, and says whether there is one.
func ReadToldFile(path string) (int64, bool, error) {
	b, err := osfile.ReadFile(path, maxTold)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, nil
	case err != nil:
		return 0, true, err
	}
	n, err := parseTold(path, b)
	return n, true, err
}

// parseTold reads a told file's bytes: toldLine's two numbers, of which
// the lesser counts (see WriteTold), or one number, as files written
// before held it. An empty file (made, its first write not yet done)
// is 0.
func parseTold(path string, b []byte) (int64, error) {
	if len(b) > maxTold {
		return 0, fmt.Errorf("%w: %s: over %d bytes", store.ErrCorrupt, path, maxTold)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || len(fields) > 2 {
		if len(fields) == 0 && len(b) == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: %s: %q is not one or two numbers", store.ErrCorrupt, path, b)
	}
	told := int64(-1)
	for _, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, path, err)
		}
		if told < 0 || n < told {
			told = n
		}
	}
	return told, nil
}

// Told is a conversation's told file held open, to be read again with one
// pread and written in place: a warm conversation keeps it between its
// turns. It is only ever written in place, by this process's turns and
// markings while the conversation is kept (another process's turn would
// change its last seq, and let the kept conversation go): the open file
// is the file. Were it removed by hand meanwhile, the kept file would say
// less than was told, and an answer would be handed over once more, as
// after a lost write. The zero value holds none.
//
// It remembers what it last read or wrote, so a marking writes with no
// read. A marking written past it by path while a turn held it (one
// whose conversation was out of the warm cache) makes it remember less
// than the file says; what it writes next is the later turn's answer,
// past both. Only a marking older than that one, come after it, would
// write a lesser seq over it: an answer handed over once more, as after
// a lost write, never one lost.
type Told struct {
	fd    int
	open  bool
	rw    bool  // open to write as well
	known bool  // seq is what the file said when last read or written through f
	seq   int64 // what it said
	path  string
}

// OpenTold opens the told file in the conversation's folder dir: to write
// as well, for a marking to write it through the file kept open; to read
// only where it may not write. False, and no error, when there is none.
func OpenTold(dir string) (Told, bool, error) {
	path := filepath.Join(dir, ToldName)
	rw := true
	fd, err := osfile.OpenFD(path, unix.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
		rw = false
		fd, err = osfile.OpenFD(path, unix.O_RDONLY, 0)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Told{}, false, nil
	case err != nil:
		return Told{}, true, err
	}
	return Told{fd: fd, open: true, rw: rw, path: path}, true, nil
}

// CreateTold writes seq as told in the conversation's folder dir,
// making the told file where there is none, and returns it held open to
// be kept: a new conversation's first turn makes the file and its
// answer's marking writes it through the descriptor, one open where
// WriteTold's each would be two. A file already there (one marked by path
// since the caller found none) is written as WriteTold writes it, and
// none is returned.
func CreateTold(dir string, seq int64) (Told, error) {
	path := filepath.Join(dir, ToldName)
	fd, err := openMaking(dir, path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL)
	if errors.Is(err, fs.ErrExist) {
		return Told{}, WriteTold(dir, seq)
	}
	if err != nil {
		return Told{}, err
	}
	f := Told{fd: fd, open: true, rw: true, path: path}
	if err := pwriteTold(fd, path, seq); err != nil {
		f.Close()
		return Told{}, err
	}
	f.known, f.seq = true, seq
	return f, nil
}

// IsOpen says whether f holds the file open.
func (f *Told) IsOpen() bool { return f.open }

// Read reads the highest seq told through f. A file that cannot be read
// is closed, f left holding none.
func (f *Told) Read() (int64, error) {
	var buf [maxTold + 1]byte
	n, err := osfile.Pread(f.fd, buf[:], 0)
	if err != nil {
		path := f.path
		f.Close()
		return 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	told, err := parseTold(f.path, buf[:n])
	f.known, f.seq = err == nil && n > 0, told
	return told, err
}

// Known is what f last read or wrote, and whether it did: never more than
// the file says, unless the file was written back by hand.
func (f *Told) Known() (int64, bool) { return f.seq, f.known }

// Write writes seq as told through f (see WriteTold), and says whether f
// is open to write; else the caller writes the file itself. What f last
// read or wrote stands for the file's read.
func (f *Told) Write(seq int64) (bool, error) {
	if !f.open || !f.rw {
		return false, nil
	}
	if !f.known {
		told, err := writeToldAt(f.fd, f.path, seq)
		f.known, f.seq = err == nil, told
		return true, err
	}
	if f.seq >= seq && seq != 0 {
		return true, nil
	}
	err := pwriteTold(f.fd, f.path, seq)
	f.known, f.seq = err == nil, seq
	return true, err
}

// Close closes the file f holds.
func (f *Told) Close() {
	if f.open {
		unix.Close(f.fd)
	}
	*f = Told{}
}
