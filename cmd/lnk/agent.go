package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/durable"
)

// cmdUse is `lnk agent use`: the harness that answers for the agent,
// written as its harness.json.
func cmdUse(f flags, args []string, getenv func(string) string) error {
	name := f.String("harness", "", "the harness's name: link, or x for a program lnk-x on PATH")
	a, _, err := f.parseAgent(args, func([]string) bool { return *name != "" }, "lnk agent use needs --harness NAME")
	if err != nil {
		return err
	}
	h, err := settings.Harness(*name, onPath(getenv("PATH")))
	if err != nil {
		return err
	}
	path, err := a.Path(home.Harness, "")
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return err
	}
	if err := durable.WriteFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	fmt.Printf("%s uses %s: plugin %s, program %s\n", a.Name, h.Name, h.Plugin, h.Program)
	return nil
}

// onPath returns whether a program is an executable file in one of the
// folders of path (a PATH's value).
func onPath(path string) func(program string) bool {
	return func(program string) bool {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				dir = "."
			}
			fi, err := os.Stat(filepath.Join(dir, program))
			if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return true
			}
		}
		return false
	}
}

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
