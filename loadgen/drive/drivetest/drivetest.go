package drivetest

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
)

// dir holds the harness build built, if it did.
var dir string

// build builds lnk-link-harness from this tree once per test binary.
var build = sync.OnceValues(func() (string, error) {
	var err error
	if dir, err = os.MkdirTemp("", "lnk-drive-test-"); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return drive.BuildHarness(ctx, dir)
})

// Harness returns the program lnk-link-harness built from this tree for
// t. It skips t with -short, or when the harness does not build; in CI
// (CI=true) it never skips, and a failed build fails t.
func Harness(t *testing.T) string {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if testing.Short() && !ci {
		t.Skip("builds and runs the harness")
	}
	program, err := build()
	if err != nil {
		if ci {
			t.Fatal(err)
		}
		t.Skip("the harness does not build:", err)
	}
	return program
}

// Main runs the tests of m, then removes the harness Harness built, and
// exits: a TestMain for the packages whose tests call Harness.
func Main(m *testing.M) {
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
