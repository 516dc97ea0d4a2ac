package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
)

func cmdAgent(args []string) error {
	switch {
	case len(args) >= 1 && args[0] == "configure":
		return cmdConfigure(args[1:])
	case len(args) >= 2 && args[0] == "chat" && args[1] == "show":
		return cmdChatShow(args[2:])
	case len(args) >= 2 && args[0] == "chat" && args[1] == "convert":
		return cmdChatConvert(args[2:])
	}
	return usageError("lnk agent: configure, chat show or chat convert")
}

// agentFlags adds --home and --agent to fs; the returned function gives the
// agent they name.
func agentFlags(fs *flag.FlagSet) func() (home.Agent, error) {
	dir := fs.String("home", "", "the agent's home (default $LNK_HOME/agents/<agent>)")
	name := fs.String("agent", "", "the agent's name")
	return func() (home.Agent, error) {
		if *dir != "" {
			abs, err := filepath.Abs(*dir)
			if err != nil {
				return home.Agent{}, err
			}
			n := *name
			if n == "" {
				n = filepath.Base(abs)
			}
			return home.Agent{Name: n, Dir: abs}, nil
		}
		if *name == "" {
			return home.Agent{}, usageError("name the agent with --home DIR or --agent NAME")
		}
		if _, err := home.ThreadDir(*name); err != nil || home.Plain(*name) != nil {
			return home.Agent{}, fmt.Errorf("--agent %q is not a plain name", *name)
		}
		root := os.Getenv("LNK_HOME")
		if root == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return home.Agent{}, err
			}
			root = filepath.Join(h, ".lnk")
		}
		return home.Agent{Name: *name, Dir: filepath.Join(root, "agents", *name)}, nil
	}
}

// parseInterleaved parses flags that may come after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func cmdConfigure(args []string) error {
	fs := flag.NewFlagSet("lnk agent configure", flag.ContinueOnError)
	spec := fs.String("spec", "", "the agent's spec, a TOML file")
	agent := agentFlags(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *spec == "" {
		return usageError("lnk agent configure needs --spec FILE")
	}
	a, err := agent()
	if err != nil {
		return err
	}
	src, err := os.ReadFile(*spec)
	if err != nil {
		return err
	}
	s, err := settings.Parse(*spec, src)
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

func cmdChatShow(args []string) error {
	fs := flag.NewFlagSet("lnk agent chat show", flag.ContinueOnError)
	agent := agentFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("lnk agent chat show takes one THREAD")
	}
	a, err := agent()
	if err != nil {
		return err
	}
	r := &turn.Runner{Agent: a, Open: stores.Open}
	conv, err := r.Conversation(pos[0])
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no conversation %q in %s", pos[0], a.Dir)
	}
	if err != nil {
		return err
	}
	defer conv.Close()
	w := bufio.NewWriter(os.Stdout)
	if _, err := turn.WriteCopy(context.Background(), w, a.Name, conv); err != nil {
		return err
	}
	return w.Flush()
}
