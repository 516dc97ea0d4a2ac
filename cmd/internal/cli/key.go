package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadKey returns the key a key file holds, trimmed of the space around
// it. A key file that its group or others may read or write is refused, as
// ssh refuses such a private key: the key is a secret the file already
// leaked, and a file others can write is a key they choose. The error says
// the mode found and the chmod that fixes it.
func ReadKey(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if err := checkKeyMode(path, fi.Mode()); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// checkKeyMode says what is wrong with a key file's mode: open to its
// group or others.
func checkKeyMode(path string, mode os.FileMode) error {
	if perm := mode.Perm(); perm&0o077 != 0 {
		return fmt.Errorf("key file %s has mode %#o, open to its group or others: chmod 600 %s", path, perm, path)
	}
	return nil
}
