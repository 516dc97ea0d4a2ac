package turn

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/internal/osfile"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// An answer is told when its caller was given it, or it was kept for
// _link/recover. A process that dies between writing an answer and
// telling it leaves an answer nobody was told; the next turn of the
// conversation, in whatever process, finds it and hands it to
// Runner.Untold, once.
//
// What was told is the highest seq told, in chats/<dir>/told, written as
// each answer is told (by the server, just before the reply goes: a caller
// whose reply is lost asks again by the message's id) over the file in
// place and not synced: a process's death keeps it (the kernel holds it),
// a machine's may lose the last few, which are then handed over once more
// rather than never. Answers this process has made and is telling are held
// in memory (telling), so its own next turn, which may begin before the
// telling is written, does not take them for a dead process's.
//
// It lived in the pending folder (chats/<dir>/pending/told) before, and is
// read from there while the conversation's folder has none: a new
// conversation's first turn so makes one file, not a folder and a file in
// it, which cost it more than its fdatasync.

// toldName is the file of the highest seq told, in the conversation's
// folder, and in its pending folder as it was kept before.
const toldName = "told"

// tellings are the answers a Runner's turns gave and its caller has not
// yet marked told, by conversation folder. The zero value is ready to use;
// it is safe for concurrent use.
type tellings struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]int64
}

// rest lets go of the map once no answer waits to be marked told.
func (ts *tellings) rest() {
	ts.mu.Lock()
	if len(ts.m) == 0 {
		ts.m = nil
	}
	ts.mu.Unlock()
}

func (ts *tellings) add(dir string, seq int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]int64{}
	}
	ts.m[dir] = max(ts.m[dir], seq)
}

func (ts *tellings) done(dir string, seq int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m[dir] <= seq {
		delete(ts.m, dir)
	}
}

func (ts *tellings) has(dir string, seq int64) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.m[dir] >= seq
}

// MarkTold records that the answer at seq of thread was told (given to
// its caller, or kept for _link/recover), and every one before it.
func (r *Runner) MarkTold(thread string, seq int64) error {
	dir, err := r.Agent.Path(home.Chat, thread)
	if err != nil {
		return err
	}
	defer r.telling.done(dir, seq)
	if ok, err := r.Warm.markTold(r.Agent.Name, thread, dir, seq); ok {
		return err
	}
	return writeTold(r.Agent, thread, seq)
}

// writeTold writes seq as thread's highest told, unless it holds a
// higher one; not synced (see above).
//
// The file is written over in place, never made anew: creating a file and
// renaming it into place cost a turn more than its fdatasync did. It
// holds the seq twice, in 20 digits each (toldLine), so a reader that
// meets a write half done, which may have a new number's first digits
// before an old one's last, reads the two and keeps the lesser, which is
// never above what was told: an answer is handed over once more rather
// than never.
func writeTold(a home.Agent, thread string, seq int64) error {
	dir, err := a.Path(home.Chat, thread)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, toldName)
	fd, err := osfile.OpenFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // a store that keeps no file there may not have made the folder
		if err = os.MkdirAll(dir, 0o700); err == nil {
			fd, err = osfile.OpenFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
		}
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return writeToldAt(fd, path, seq)
}

// writeToldAt is writeTold on the told file open as fd: one read of a
// bare descriptor (a regular file's pread is short only at its end, and
// the file is never longer than maxTold but by damage), and the write.
func writeToldAt(fd int, path string, seq int64) error {
	var buf [maxTold + 1]byte
	n, err := osfile.Pread(fd, buf[:], 0)
	if err != nil {
		return &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if told, err := parseTold(path, buf[:n]); err == nil && told >= seq && seq != 0 && n > 0 {
		return nil
	}
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

// readTold reads the highest seq told from the conversation's folder dir,
// or while it has none from its pending folder pend, where it was kept
// before; 0 when none was.
func readTold(dir, pend string) (int64, error) {
	n, ok, err := readToldPath(filepath.Join(dir, toldName))
	if !ok {
		n, _, err = readToldPath(filepath.Join(pend, toldName))
	}
	return n, err
}

// maxTold is the longest told file: toldLine's 42 bytes, and room to
// spare; anything longer is damage.
const maxTold = 63

// readToldPath reads the told file at path, and says whether there is one.
func readToldPath(path string) (int64, bool, error) {
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
// the lesser counts (see writeTold), or one number, as files written
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

// untold hands the conversation's last answer to Runner.Untold when nobody
// was told it: it is the last event (or the last before the summary
// written after it), it calls nothing, it is past what was told, and this
// process is not telling it. Run holding the conversation, so in one
// process at a time; it is then marked told, so it is handed over once.
//
// A conversation with no told file yet (new, or kept before Link Harness
// recorded what it told) is given one saying its last seq: nothing of it
// is handed over, since nothing says what was told before.
func (t *turn) untold(ctx context.Context) error {
	if t.r.Untold == nil {
		return nil
	}
	pend, err := t.r.Agent.Path(home.ChatPending, t.thread)
	if err != nil {
		return err
	}
	told, ok, err := t.readTold(t.dir, pend)
	switch {
	case err != nil:
		return err
	case !ok:
		t.touched = true // the pending folder made, maybe
		return writeTold(t.r.Agent, t.thread, t.last)
	case t.last == 0:
		return nil
	}
	var a *event.Event
	err = t.backward(ctx, func(e *event.Event) bool {
		switch {
		case e.Type == event.TypeSummary && e.Seq == t.last:
			return true // the summary's turn: its answer is before it
		case e.Type == event.TypeAnswer && len(e.Calls) == 0:
			a = e
		}
		return false
	})
	if err != nil || a == nil || t.r.telling.has(t.dir, a.Seq) || told >= a.Seq {
		return err
	}
	t.r.Untold(t.thread, answerOf(t.thread, a))
	return writeTold(t.r.Agent, t.thread, a.Seq)
}

// readTold is readTold, the function, for the turn: the told file is kept open
// between the turns of a warm conversation (warmConv.told), and read again
// with one pread. It is only ever written in place, by this process's
// turns and MarkTold while the conversation is warm here (another
// process's turn would change its last seq, and the warm conversation
// with it): the open file is the file. Were it removed by hand meanwhile,
// the kept file would say less than was told, and an answer would be
// handed over once more, as after a lost write. One kept in the pending
// folder pend, as before, is read and not kept open: the next told is
// written in the conversation's folder dir.
func (t *turn) readTold(dir, pend string) (int64, bool, error) {
	path := filepath.Join(dir, toldName)
	fd := -1
	if t.warm != nil && t.warm.toldOpen {
		fd = t.warm.toldFD
	} else {
		// Open to write as well, for MarkTold to write it through the
		// warm conversation (Warm.markTold); to read only where it may
		// not write.
		var err error
		rw := true
		fd, err = osfile.OpenFD(path, unix.O_RDWR, 0)
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
			rw = false
			fd, err = osfile.OpenFD(path, unix.O_RDONLY, 0)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return readToldPath(filepath.Join(pend, toldName))
		case err != nil:
			return 0, true, err
		}
		if t.warm != nil {
			t.warm.toldFD, t.warm.toldOpen, t.warm.toldRW = fd, true, rw
			t.warm.toldPath = path
		}
	}
	var buf [maxTold + 1]byte
	n, err := osfile.Pread(fd, buf[:], 0)
	if err != nil || t.warm == nil {
		if t.warm != nil {
			t.warm.closeTold()
		} else {
			unix.Close(fd)
		}
	}
	if err != nil {
		return 0, true, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	told, err := parseTold(path, buf[:n])
	return told, true, err
}
