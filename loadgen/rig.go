package loadgen

import (
	"context"
	"fmt"
	"os"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/scripted"
)

// rig is what a load run and a soak stand on, set up in this order: a
// temporary folder, the harness program, the tool servers when asked for,
// the scripted model, and the agents' homes. close stops and removes all
// of it.
type rig struct {
	tmp     string
	found   string // the harness program, as drive.FindHarness found it
	program string // what to run: found, or a script running it pointed at the tools
	tools   *toolServers
	model   *model
	agents  []drive.Agent
}

// newRig makes a rig in a new folder under dir (named prefix and more):
// the harness program (the one path names, or as drive.FindHarness finds
// it), the tool servers with tools (the script then taught to call them),
// the scripted model answering as script says, and n agents using it.
func newRig(ctx context.Context, dir, prefix, path string, script *scripted.Script, tools bool, n int) (r *rig, err error) {
	r = &rig{}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.tmp, err = os.MkdirTemp(dir, prefix); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	if r.found, _, err = drive.FindHarness(ctx, path, r.tmp); err != nil {
		return nil, err
	}
	r.program = r.found
	if tools {
		if r.tools, r.program, script, err = serveTools(r.tmp, r.found, script); err != nil {
			return nil, err
		}
	}
	if r.model, err = startModel(script); err != nil {
		return nil, err
	}
	if r.agents, err = drive.NewAgents(r.tmp, n, r.model.url); err != nil {
		return nil, err
	}
	return r, nil
}

// close stops the model and the tool servers and removes the folder.
func (r *rig) close() {
	if r.model != nil {
		r.model.close()
	}
	if r.tools != nil {
		r.tools.close()
	}
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
}
