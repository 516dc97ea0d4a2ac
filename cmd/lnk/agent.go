package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"

	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
)

// cmdConfigure is `lnk agent configure`: the agent's spec, checked and
// written as its config.json.
func cmdConfigure(f flags, args []string, getenv func(string) string) error {
	spec := f.String("spec", "", "the agent's spec, a TOML file")
	a, _, err := f.parseAgent(args, func([]string) bool { return *spec != "" }, "lnk agent configure needs --spec FILE")
	if err != nil {
		return err
	}
	src, err := os.ReadFile(*spec)
	if err != nil {
		return err
	}
	s, err := settings.Parse(*spec, src, a.Dir)
	if err != nil {
		return err
	}
	path, err := a.Path(home.Config, "")
	if err != nil {
		return err
	}
	if err := settings.Write(path, s); err != nil {
		return err
	}
	fmt.Printf("configured %s: %s\n", a.Name, path)
	return nil
}

// cmdChatShow is `lnk agent chat show`: a conversation's copy for people.
func cmdChatShow(f flags, args []string, getenv func(string) string) error {
	withSummaries := f.Bool("summaries", false, "show the summaries the model reads in place of what left its window")
	ch, err := f.openChat(args, getenv, threads(1), "lnk agent chat show takes one THREAD")
	if err != nil {
		return err
	}
	defer ch.Close()
	a, pos := ch.agent, ch.pos
	r := &turn.Runner{Agent: a, Open: ch.opener.Open}
	conv, err := r.Conversation(pos[0])
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no conversation %q in %s", pos[0], a.Dir)
	}
	if err != nil {
		return err
	}
	defer conv.Close()
	w := bufio.NewWriter(os.Stdout)
	write := chatcopy.Write
	if *withSummaries {
		write = chatcopy.WriteWithSummaries
	}
	if _, err := write(context.Background(), w, a.Name, conv); err != nil {
		w.Flush() // what was whole before the damage
		if errors.Is(err, store.ErrCorrupt) {
			return fmt.Errorf("%w (lnk agent chat repair %s keeps what is whole)", err, pos[0])
		}
		return err
	}
	return w.Flush()
}
