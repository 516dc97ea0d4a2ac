package main

import (
	"errors"
	"strings"
	"testing"

	"lnk.dev/linkharness/cmd/internal/stores"
)

// TestConvertRefusedWhileServed holds the home as lnk-link-harness serve
// does: convert refuses, saying why.
func TestConvertRefusedWhileServed(t *testing.T) {
	h := t.TempDir()
	served(t, h)
	err := run([]string{"agent", "chat", "convert", "--home", h, "--to", "compact"}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "the agent is running") {
		t.Fatalf("convert while served: %v", err)
	}
	if err := run([]string{"agent", "chat", "convert", "--home", t.TempDir(), "--to", "nosuchdriver"}, noEnv); !errors.Is(err, stores.ErrBadKind) || !strings.Contains(err.Error(), "no program lnk-nosuchdriver") {
		t.Fatalf("convert to a driver with no program: %v", err)
	}
}
