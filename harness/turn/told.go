package turn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// An answer is told when its caller was given it, or it was kept for
// _link/recover. A process that dies between writing an answer and
// telling it leaves an answer nobody was told; the next turn of the
// conversation, in whatever process, finds it and hands it to
// Runner.Untold, once.
//
// What was told is the highest seq told, in chats/<dir>/pending/told,
// written as each answer is told (by the server, just before the reply
// goes: a caller whose reply is lost asks again by the message's id)
// through a file renamed into place and not synced: a process's death keeps it (the kernel holds it), a machine's
// may lose the last few, which are then handed over once more rather than
// never. Answers this process has made and is telling are held in memory
// (telling), so its own next turn, which may begin before the telling is
// written, does not take them for a dead process's.

// toldName is the file of the highest seq told, in the conversation's
// pending folder.
const toldName = "told"

// tellings are the answers a Runner's turns gave and its caller has not
// yet marked told, by conversation folder. The zero value is ready to use;
// it is safe for concurrent use.
type tellings struct {
	mu sync.Mutex
	// guarded by mu
	m map[string]int64
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
	return writeTold(r.Agent, thread, seq)
}

// writeTold writes seq as thread's highest told, unless it holds a
// higher one; whole or not at all, not synced (see above).
func writeTold(a home.Agent, thread string, seq int64) error {
	pend, err := a.Path(home.ChatPending, thread)
	if err != nil {
		return err
	}
	if told, err := readTold(pend); err == nil && told >= seq && seq != 0 {
		return nil
	}
	if err := os.MkdirAll(pend, 0o700); err != nil {
		return err
	}
	tmp, fd, err := createTemp(pend, "."+toldName+".")
	if err != nil {
		return err
	}
	rec := append(strconv.AppendInt(nil, seq, 10), '\n')
	n, err := unix.Write(fd, rec)
	if err == nil && n < len(rec) {
		err = io.ErrShortWrite
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(pend, toldName))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("turn: write %s: %w", tmp, err)
	}
	return nil
}

// createTemp makes a new file in dir named prefix and a random number,
// as os.CreateTemp does, but a bare descriptor: an os.File of a regular
// file costs four fcntl calls and a failing epoll_ctl, twice a message
// here.
func createTemp(dir, prefix string) (string, int, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		fd, err := unix.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && try < 10000 {
			continue
		}
		if err != nil {
			return "", -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return name, fd, nil
	}
}

// readSmall reads the small file name with a bare descriptor (see
// createTemp), to its end or to the end of a read that ends a line (the
// record is one line, written whole): an open, a read and a close.
func readSmall(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 64)
	for {
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		b = b[:len(b)+n]
		if n == 0 || b[len(b)-1] == '\n' {
			return b, nil // the record is one line, written whole
		}
		if len(b) == cap(b) {
			if len(b) >= 4<<10 {
				return b, nil // more than a seq: ParseInt says what is wrong
			}
			b = append(b, 0)[:len(b)]
		}
	}
}

// readTold reads the highest seq told from the pending folder pend; 0
// when none was.
func readTold(pend string) (int64, error) {
	b, err := readSmall(filepath.Join(pend, toldName))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", store.ErrCorrupt, filepath.Join(pend, toldName), err)
	}
	return n, nil
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
	if _, err := os.Stat(filepath.Join(pend, toldName)); errors.Is(err, fs.ErrNotExist) {
		return writeTold(t.r.Agent, t.thread, t.last)
	}
	if t.last == 0 {
		return nil
	}
	var (
		a    *event.Event
		derr error
	)
	err = t.conv.Read(ctx, store.FromLast, store.Backward, func(seq int64, ev []byte) bool {
		t.read += int64(len(ev))
		var e event.Event
		if derr = t.dec.Decode(ev, &e); derr != nil {
			return false
		}
		switch {
		case e.Type == event.TypeSummary && seq == t.last:
			return true // the summary's turn: its answer is before it
		case e.Type == event.TypeAnswer && len(e.Calls) == 0:
			a = &e
		}
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil || a == nil || t.r.telling.has(t.dir, a.Seq) {
		return err
	}
	told, err := readTold(pend)
	if err != nil || told >= a.Seq {
		return err
	}
	t.r.Untold(t.thread, answerOf(t.thread, a))
	return writeTold(t.r.Agent, t.thread, a.Seq)
}
