package main

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// heldHomes are the served agents' home folders, each open with a shared
// flock held until the process ends: lnk agent chat convert takes it
// exclusive without waiting, so it refuses while an agent is served, and an
// agent is not served while its conversations are converted.
var heldHomes struct {
	sync.Mutex
	files []*os.File // kept so no finalizer closes them
}

// holdHome takes the shared flock on the agent's home folder dir.
func holdHome(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return fmt.Errorf("home %s: its conversations are being converted (lnk agent chat convert); serve it once that ends", dir)
		}
		return fmt.Errorf("lock home %s: %w", dir, err)
	}
	heldHomes.Lock()
	heldHomes.files = append(heldHomes.files, f)
	heldHomes.Unlock()
	return nil
}
