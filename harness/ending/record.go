package ending

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"lnk.dev/linkharness/harness/home"
)

// maxRecord is the most of a record read: a seq in decimal and a newline.
const maxRecord = 32

// Ask writes the end record of the conversation in folder dir, asking the
// turn that wrote the event at seq to end. It is written in place in one
// write and not synced: a reader that finds it empty or cut reads it again
// at its next tick, and a record lost with its machine asked a turn that
// died with it.
func Ask(dir string, seq int64) error {
	path, err := home.In(dir, home.ChatEnd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, strconv.AppendInt(nil, seq, 10), 0o600)
}

// Clear removes the end record of the conversation in dir; none is success.
func Clear(dir string) error {
	path, err := home.In(dir, home.ChatEnd)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// read reads the record at path: the seq it names, and whether there is a
// whole one. A record that is empty or not a seq (one being written) is
// none yet.
func read(path string, buf *[maxRecord]byte) (int64, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	n, _ := f.Read(buf[:])
	seq, err := strconv.ParseInt(string(bytes.TrimSpace(buf[:n])), 10, 64)
	if err != nil || seq < 1 {
		return 0, false, nil
	}
	return seq, true, nil
}

// errPath is a folder whose record has no path (see home.In).
func errPath(dir string, err error) error {
	return fmt.Errorf("ending: the end record of %s: %w", dir, err)
}
