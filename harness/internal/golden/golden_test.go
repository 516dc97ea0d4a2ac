package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps whether the test failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

// The same bytes pass, others fail, a missing file fails, and update
// writes the file that then passes.
func TestCheck(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "a.golden"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, got string
		fails           bool
	}{
		{"same", "a.golden", "one\n", false},
		{"other bytes", "a.golden", "one", true},
		{"no file", "b.golden", "one\n", true},
	} {
		r := &recorder{TB: t}
		Check(r, tc.file, []byte(tc.got), false)
		if r.failed != tc.fails {
			t.Errorf("%s: failed %v, want %v", tc.name, r.failed, tc.fails)
		}
	}
	Check(t, "b.golden", []byte("two\n"), true)
	r := &recorder{TB: t}
	if Check(r, "b.golden", []byte("two\n"), false); r.failed {
		t.Error("the file update wrote does not pass")
	}
}
