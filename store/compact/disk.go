package compact

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// disk is every change the package makes to a file: a test stands a
// failing disk in its place (see fault_test.go).
type disk interface {
	writeAt(f *os.File, b []byte, off int64) (int, error)
	sync(f *os.File) error // fdatasync
	truncate(f *os.File, size int64) error
}

// osDisk is the real one.
type osDisk struct{}

func (osDisk) writeAt(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }

func (osDisk) sync(f *os.File) error {
	for {
		if err := unix.Fdatasync(int(f.Fd())); err != unix.EINTR {
			return err
		}
	}
}

func (osDisk) truncate(f *os.File, size int64) error { return f.Truncate(size) }

// sync makes f durable, timing it. After a failure nothing written since
// the last good one can be trusted to the descriptor again, so both files
// are closed, once the lock is let go, and opened afresh by the next call.
func (c *Conversation) sync(f *os.File) error {
	if c.opts.Unsynced {
		c.dirty = true
		return nil
	}
	start := time.Now()
	err := c.disk.sync(f)
	if c.opts.Synced != nil {
		c.opts.Synced(time.Since(start))
	}
	if err != nil {
		c.stale = true
		return fmt.Errorf("compact: fdatasync %s: %w", f.Name(), err)
	}
	return nil
}

// syncDir makes new names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("compact: fsync %s: %w", dir, err)
	}
	return nil
}

// keepTorn appends bytes cut off a file to the torn file name beside it,
// durably, as one record: a line saying where they were, then the bytes
// and a '\n'.
func (c *Conversation) keepTorn(name, from string, off int64, b []byte) error {
	head := fmt.Appendf(nil, "# %s offset %d, %d bytes, cut %s\n", from, off, len(b), time.Now().UTC().Format(time.RFC3339Nano))
	rec := append(append(head, b...), '\n')
	path := c.dir + string(os.PathSeparator) + name
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("compact: keep what is cut off %s: %w", from, err)
	}
	_, err = f.Write(rec)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("compact: keep what is cut off %s in %s: %w", from, path, err)
	}
	return syncDir(c.dir)
}
