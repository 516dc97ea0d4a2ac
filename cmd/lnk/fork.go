package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"

	"lnk.dev/linkharness/harness/fork"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
)

func cmdChatFork(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("lnk agent chat fork", flag.ContinueOnError)
	usageOf(fs, "lnk agent chat fork THREAD --before SEQ --text T [--id ID] [--thread NEW] [--home DIR | --agent NAME]",
		"Makes a new conversation of THREAD's events before SEQ, an owner message, byte for byte, then\nthe message T in its place, and asks the model to answer it as a turn does (LNK_MODEL_PROXY, the\nLNK_TOOL_* tools). Prints the new thread and the answer. The new thread is NEW, or THREAD:forkSEQ\n(then .2, .3 … when taken).")
	before := fs.Int64("before", 0, "the seq of the owner message the fork replaces")
	text := fs.String("text", "", "the new message's text")
	id := fs.String("id", "", "the new message's id")
	thread := fs.String("thread", "", "the new conversation's thread (default THREAD:forkSEQ)")
	a, pos, opener, err := chatCommand(fs, args, getenv, 1, "lnk agent chat fork takes one THREAD")
	if err != nil {
		return err
	}
	defer opener.Close()
	if *before <= 0 || *text == "" {
		return usageError("lnk agent chat fork needs --before SEQ and --text T")
	}
	servers, _ := tools.FromEnviron(os.Environ())
	r := &turn.Runner{Agent: a, Getenv: getenv, HTTP: &http.Client{}, Open: opener.Open, Tools: tools.New(a, servers, tools.Options{})}
	defer r.Tools.Close()
	ans, err := fork.Make(context.Background(), r, pos[0], fork.Fork{Before: *before, Text: *text, ID: *id, Thread: *thread}, nil)
	if err != nil {
		return err
	}
	fmt.Printf("forked %s before %d as %s\n%s\n", pos[0], *before, ans.Thread, ans.Text)
	return nil
}
