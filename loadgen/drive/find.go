package drive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ProgramName is Link Harness's program.
const ProgramName = "lnk-link-harness"

// harnessPackage is the program's package, built when running from the
// source tree.
const harnessPackage = "lnk.dev/linkharness/cmd/lnk-link-harness"

// buildTimeout bounds building the harness from the source tree.
const buildTimeout = 5 * time.Minute

// ErrNoHarness comes from FindHarness when the program is nowhere and
// cannot be built.
var ErrNoHarness = errors.New("drive: no " + ProgramName)

// FindHarness returns the harness program: path when given; else
// lnk-link-harness on PATH; else beside this program; else, when the
// working folder is in Link Harness's source tree (as under `go run`), it
// builds it into dir. built says whether it was built.
func FindHarness(ctx context.Context, path, dir string) (program string, built bool, err error) {
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", false, err
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", false, fmt.Errorf("%w: --harness %s is not an executable file", ErrNoHarness, path)
		}
		return abs, false, nil
	}
	if p, err := exec.LookPath(ProgramName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, false, nil
		}
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), ProgramName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, false, nil
		}
	}
	p, err := BuildHarness(ctx, dir)
	if err != nil {
		return "", false, err
	}
	return p, true, nil
}

// BuildHarness builds the harness program into dir with the go command, in
// the working folder's module, which must be Link Harness's.
func BuildHarness(ctx context.Context, dir string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: not on PATH nor beside this program, and no go command to build it (pass --harness)", ErrNoHarness)
	}
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	out := filepath.Join(dir, ProgramName)
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", out, harnessPackage)
	cmd.WaitDelay = 5 * time.Second
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: not on PATH nor beside this program, and building it here failed (pass --harness, or run from the source tree): %v: %s",
			ErrNoHarness, err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}
