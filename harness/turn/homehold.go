package turn

import (
	"sync"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/home"
)

// homeHold is an agent's home held shared (home.LockShared) while a turn
// of it runs or a conversation of it is kept warm, so lnk agent chat
// convert and repair, which hold it exclusive, never run beside a turn,
// and an agent with neither holds no descriptor for it. The first turn
// opens and locks the folder, the last reference closes it. The zero
// value holds nothing; it is safe for concurrent use.
type homeHold struct {
	mu sync.Mutex
	// guarded by mu
	fd   int // the home folder, open and locked while refs > 0
	refs int
}

// take holds the home at dir, or is home.ErrConverting while convert or
// repair holds it.
func (h *homeHold) take(dir string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == 0 {
		fd, err := home.LockShared(dir)
		if err != nil {
			return err
		}
		h.fd = fd
	}
	h.refs++
	return nil
}

// ref adds a reference to a home held already.
func (h *homeHold) ref() {
	h.mu.Lock()
	h.refs++
	h.mu.Unlock()
}

// drop lets go of a reference; the last closes the folder.
func (h *homeHold) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs--; h.refs == 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}
