package home

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrConverting comes when an agent's home is held by lnk agent chat
// convert or repair, which take it exclusive: no turn runs until they end.
// Sending the message again once they have is answered.
var ErrConverting = errors.New("home: its conversations are being converted or repaired (lnk agent chat convert, repair)")

// ErrServed comes when an agent's home is held by a turn of
// lnk-link-harness serve, or a conversation it keeps warm, or by another
// lnk agent chat command: convert and repair refuse to run beside them.
var ErrServed = errors.New("home: a turn runs in it, or another lnk agent chat command does")

// The home folder's flock says who uses the agent's conversations: a turn
// of lnk-link-harness serve holds it shared while it runs (and while what
// it composed is kept warm for the conversation's next turn), and lnk
// agent chat convert and repair hold it exclusive, so neither runs beside
// the other. A flock belongs to the open folder, so it goes with a
// process that dies.

// LockShared opens the home folder dir and takes its flock shared, without
// waiting: the descriptor to close to let it go, or ErrConverting.
func LockShared(dir string) (int, error) {
	return lockHome(dir, unix.LOCK_SH, ErrConverting)
}

// LockStopped opens the home folder dir and takes its flock exclusive,
// without waiting: the descriptor to close to let it go, or ErrServed.
func LockStopped(dir string) (int, error) {
	return lockHome(dir, unix.LOCK_EX, ErrServed)
}

func lockHome(dir string, how int, held error) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("home %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, how|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return -1, fmt.Errorf("%w: %s", held, dir)
		}
		return -1, fmt.Errorf("lock home %s: %w", dir, err)
	}
	return fd, nil
}

// Serving says whether the agent at dir can take turns now: ErrConverting
// while convert or repair holds its home.
func Serving(dir string) error {
	fd, err := LockShared(dir)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// Hold is an agent's home held shared (LockShared) while a turn of it
// runs or a conversation of it is kept warm, so lnk agent chat convert and
// repair, which hold it exclusive, never run beside a turn, and an agent
// with neither holds no descriptor for it. The first reference opens and
// locks the folder, the last closes it. The zero value holds nothing; it
// is safe for concurrent use.
type Hold struct {
	mu sync.Mutex
	// guarded by mu
	fd   int // the home folder, open and locked while refs > 0
	refs int
}

// Take holds the home at dir, or is ErrConverting while convert or
// repair holds it.
func (h *Hold) Take(dir string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == 0 {
		fd, err := LockShared(dir)
		if err != nil {
			return err
		}
		h.fd = fd
	}
	h.refs++
	return nil
}

// Ref adds a reference to a home held already.
func (h *Hold) Ref() {
	h.mu.Lock()
	h.refs++
	h.mu.Unlock()
}

// Drop lets go of a reference; the last closes the folder.
func (h *Hold) Drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs--; h.refs == 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}
