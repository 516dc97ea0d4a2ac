package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/convert"
	"lnk.dev/linkharness/harness/home"
)

// cmdChatConvert writes every conversation of a stopped agent the way
// --to says (see harness/convert).
//
// The agent must be stopped: lnk-link-harness serve holds a shared flock
// on the agent's home folder while it serves, and convert takes it
// exclusive without waiting, so it refuses while the agent runs, and an
// agent started during a conversion refuses to serve.
func cmdChatConvert(f flags, args []string, getenv func(string) string) error {
	to := f.String("to", "", "how to keep the conversations: log, compact or a driver's name")
	ch, err := f.openChat(args, getenv, func(pos []string) bool { return *to != "" && len(pos) == 0 }, "lnk agent chat convert --to log|compact|DRIVER")
	if err != nil {
		return err
	}
	defer ch.Close()
	a, opener := ch.agent, ch.opener
	if err := opener.Check(a.Dir, *to); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	chats, err := a.Path(home.Chats, "")
	if err != nil {
		return err
	}
	c := &convert.Converter{Stores: opener, Warn: func(msg string) { fmt.Fprintln(os.Stderr, "lnk:", msg) }}
	count, err := c.Chats(chats, *to)
	if count == nil && errors.Is(err, fs.ErrNotExist) {
		fmt.Printf("%s has no conversations\n", a.Name)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d conversations now kept as %s, %d were already\n", a.Name, count[convert.Converted], *to, count[convert.Already])
	return nil
}

// holdStopped takes the agent's home exclusive, without waiting, for the
// command what: a turn of lnk-link-harness serve holds it shared while it
// runs, and while its conversation is kept warm for the next.
func holdStopped(dir, what string) (func(), error) {
	fd, err := home.LockStopped(dir)
	if errors.Is(err, home.ErrServed) {
		return nil, fmt.Errorf("the agent is running, or another lnk agent chat command is (a turn of lnk-link-harness serve holds %s): stop it, then %s", dir, what)
	}
	if err != nil {
		return nil, err
	}
	return func() { unix.Close(fd) }, nil
}
