package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// holdHome takes a shared flock on the agent's home folder dir, held
// until the returned file is closed, for as long as the agent is served:
// lnk agent chat convert and repair take it exclusive without waiting,
// so they refuse while an agent is served, and an agent is not served
// while its conversations are converted or repaired.
func holdHome(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("home %s: its conversations are being converted or repaired (lnk agent chat convert, repair); serve it once that ends", dir)
		}
		return nil, fmt.Errorf("lock home %s: %w", dir, err)
	}
	return f, nil
}
