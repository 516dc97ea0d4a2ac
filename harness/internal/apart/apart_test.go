package apart

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// f runs on a goroutine other than its caller's, and what it returns
// comes back whole.
func TestDo(t *testing.T) {
	caller := goroutineID()
	v, err := Do(func() (string, error) {
		if goroutineID() == caller {
			return "", errors.New("ran on the caller's goroutine")
		}
		return "deep", nil
	})
	if err != nil || v != "deep" {
		t.Fatalf("Do: %q, %v", v, err)
	}
	bad := errors.New("bad")
	if _, err := Do(func() (int, error) { return 0, bad }); !errors.Is(err, bad) {
		t.Errorf("Do's error: %v, want %v", err, bad)
	}
}

// goroutineID is the calling goroutine's number, from its traceback's
// first line, "goroutine N [running]:".
func goroutineID() string {
	buf := make([]byte, 64)
	line := string(buf[:runtime.Stack(buf, false)])
	id, _, _ := strings.Cut(strings.TrimPrefix(line, "goroutine "), " ")
	return id
}
