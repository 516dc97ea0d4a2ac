package peer

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
)

// floorPackage is the floor server's package (bench/floor): the least a
// warm harness does per message, driven as Link Harness is.
const floorPackage = "lnk.dev/linkharness/bench/floor"

// Floor is the floor server measured as a peer, so Link Harness's CPU per
// message is also told as a ratio to the floor's, in the same run, which
// does not drift with the machine. It speaks serve's command line and the
// message API, so drive.Link drives it.
type Floor struct {
	drive.Link
}

// Name implements drive.Harness.
func (f *Floor) Name() string { return "floor" }

// BuildFloor builds the floor server into dir from Link Harness's source
// tree (the working folder must be in it, as under `go run`).
func BuildFloor(ctx context.Context, dir string) (*Floor, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("%w: the floor is built from the source tree, and there is no go command", ErrConfig)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "floor")
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", out, floorPackage)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: building the floor (run from Link Harness's source tree): %v: %s", ErrConfig, err, strings.TrimSpace(string(msg)))
	}
	return &Floor{Link: drive.Link{Program: out}}, nil
}
