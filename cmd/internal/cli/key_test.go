package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key file only its owner can read is read; one open to its group or
// others is refused, naming its mode and the fix.
func TestReadKeyMode(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o700, true},
		{0o640, false},
		{0o644, false},
		{0o666, false},
		{0o604, false},
		{0o620, false},
	} {
		path := filepath.Join(dir, "key")
		os.Remove(path)
		if err := os.WriteFile(path, []byte(" k-0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		key, err := ReadKey(path)
		switch {
		case c.ok && (err != nil || key != "k-0123456789abcdef"):
			t.Errorf("mode %#o: %q, %v", c.mode, key, err)
		case !c.ok && err == nil:
			t.Errorf("mode %#o: read, want refused", c.mode)
		case !c.ok && (!strings.Contains(err.Error(), fmt.Sprintf("mode %#o", c.mode)) || !strings.Contains(err.Error(), "chmod 600 "+path)):
			t.Errorf("mode %#o: the error does not say the mode and the fix: %v", c.mode, err)
		}
	}
}
