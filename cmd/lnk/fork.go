package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"lnk.dev/linkharness/harness/fork"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
)

// cmdChatFork is `lnk agent chat fork`: a new conversation of a thread's
// events before an owner message, then another message, answered.
func cmdChatFork(f flags, args []string, getenv func(string) string) error {
	before := f.Int64("before", 0, "the seq of the owner message the fork replaces")
	text := f.String("text", "", "the new message's text")
	id := f.String("id", "", "the new message's id")
	thread := f.String("thread", "", "the new conversation's thread (default THREAD:forkSEQ)")
	ch, err := f.openChat(args, getenv, threads(1), "lnk agent chat fork takes one THREAD")
	if err != nil {
		return err
	}
	defer ch.Close()
	if *before <= 0 || *text == "" {
		return usageError("lnk agent chat fork needs --before SEQ and --text T")
	}
	servers, _ := tools.FromEnviron(os.Environ())
	r := &turn.Runner{Agent: ch.agent, Getenv: getenv, HTTP: &http.Client{}, Open: ch.opener.Open, Tools: tools.New(ch.agent, servers, tools.Options{})}
	defer r.Tools.Close()
	ans, err := fork.Make(context.Background(), r, ch.pos[0], fork.Fork{Before: *before, Text: *text, ID: *id, Thread: *thread}, nil)
	if err != nil {
		return err
	}
	fmt.Printf("forked %s before %d as %s\n%s\n", ch.pos[0], *before, ans.Thread, ans.Text)
	return nil
}
