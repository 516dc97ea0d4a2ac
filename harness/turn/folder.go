package turn

import (
	"context"

	"lnk.dev/linkharness/harness/chatdir"
	"lnk.dev/linkharness/harness/home"
)

// Folder returns the path of the folder of the agent's home that holds
// thread's conversation, or would hold it were it begun now: the folder
// its name makes, or one a conversation made under the rule before keeps
// (see package chatdir). Every step of a Runner that reaches a thread's
// folder by the thread's name asks here, and so do its callers.
//
// A conversation kept warm in the folder its name makes is taken to be
// there without a look: its last turn here found it so, and a turn that
// opens it warm checks the folder is still the one it left.
func (r *Runner) Folder(ctx context.Context, thread string) (string, error) {
	if dir, err := r.Agent.Path(home.Chat, thread); err == nil && r.Warm.Holds(r.Agent.Name, thread, dir) {
		return dir, nil
	}
	return chatdir.Find(ctx, r.Agent, thread, r.Open)
}
