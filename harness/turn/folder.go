package turn

import (
	"context"

	"lnk.dev/linkharness/harness/chatdir"
)

// Folder returns the path of the folder of the agent's home that holds
// thread's conversation, or would hold it were it begun now: the folder
// its name makes, or one a conversation made under the rule before keeps
// (see package chatdir). Every step of a Runner that reaches a thread's
// folder by the thread's name asks here, and so do its callers.
func (r *Runner) Folder(ctx context.Context, thread string) (string, error) {
	return chatdir.Find(ctx, r.Agent, thread, r.Open)
}
