package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/cmd/internal/stores"
)

// TestConvertRefusedWhileServed holds the home as lnk-link-harness serve
// does: convert refuses, saying why.
func TestConvertRefusedWhileServed(t *testing.T) {
	h := t.TempDir()
	f, _ := os.Open(h)
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	err := cmdChatConvert([]string{"--home", h, "--to", "compact"}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "the agent is running") {
		t.Fatalf("convert while served: %v", err)
	}
	if err := cmdChatConvert([]string{"--home", t.TempDir(), "--to", "nosuchdriver"}, noEnv); !errors.Is(err, stores.ErrBadKind) || !strings.Contains(err.Error(), "no program lnk-nosuchdriver") {
		t.Fatalf("convert to a driver with no program: %v", err)
	}
}
