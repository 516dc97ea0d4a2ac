package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
)

const agentUsage = `usage:
  lnk agent use --harness NAME [--home DIR | --agent NAME]
  lnk agent configure --spec FILE [--home DIR | --agent NAME]
  lnk agent chat list [--home DIR | --agent NAME]
  lnk agent chat show THREAD [--summaries] [--home DIR | --agent NAME]
  lnk agent chat convert --to log|compact|DRIVER [--home DIR | --agent NAME]
  lnk agent chat repair THREAD [--home DIR | --agent NAME]
  lnk agent chat fork THREAD --before SEQ --text T [--home DIR | --agent NAME]

Every lnk agent command names its agent by its home folder, --home DIR, or by
its name, --agent NAME, for $LNK_HOME/agents/NAME (LNK_HOME is ~/.lnk unless set).
lnk agent COMMAND --help says more of each.`

const chatUsage = `usage:
  lnk agent chat list [--home DIR | --agent NAME]      the agent's conversations
  lnk agent chat show THREAD [--summaries] [--home DIR | --agent NAME]   a conversation's copy for people
  lnk agent chat convert --to log|compact|DRIVER [--home DIR | --agent NAME]
  lnk agent chat repair THREAD [--home DIR | --agent NAME]    a damaged conversation, made usable
  lnk agent chat fork THREAD --before SEQ --text T [--home DIR | --agent NAME]   a new conversation from THREAD's events before SEQ, then T`

func cmdAgent(args []string, getenv func(string) string) error {
	return subcommand(args, getenv, agentUsage, "lnk agent: use, configure or chat", map[string]command{
		"use": cmdUse, "configure": cmdConfigure, "chat": cmdChat,
	})
}

func cmdChat(args []string, getenv func(string) string) error {
	return subcommand(args, getenv, chatUsage, "lnk agent chat: list, show, convert, repair or fork", map[string]command{
		"list": cmdChatList, "show": cmdChatShow, "convert": cmdChatConvert, "repair": cmdChatRepair, "fork": cmdChatFork,
	})
}

// command is a command of lnk agent: its arguments after its name, and
// the environment getenv reads.
type command func(args []string, getenv func(string) string) error

// subcommand runs the one of commands args names first, with the rest;
// a help word alone prints usage, and anything else is the usage error
// says.
func subcommand(args []string, getenv func(string) string, usage, says string, commands map[string]command) error {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Println(usage)
		return nil
	}
	if len(args) >= 1 {
		if cmd, ok := commands[args[0]]; ok {
			return cmd(args[1:], getenv)
		}
	}
	return usageError(says)
}

// usageOf sets fs's usage: the line, what the command does, its flags.
func usageOf(fs *flag.FlagSet, line, does string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n\nflags:\n", line, does)
		fs.PrintDefaults()
	}
}

// agentFlags adds --home and --agent to fs; the returned function gives the
// agent they name, under getenv's LNK_HOME for --agent.
func agentFlags(fs *flag.FlagSet, getenv func(string) string) func() (home.Agent, error) {
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
		if home.Plain(*name) != nil {
			return home.Agent{}, fmt.Errorf("--agent %q is not a plain name", *name)
		}
		root := getenv("LNK_HOME")
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

// listenFlag adds --listen to fs: the address a server listens on, on
// loopback and a free port unless it says another.
func listenFlag(fs *flag.FlagSet) *string {
	return fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
}

// parseAll parses args with fs for a command that takes no argument
// beside its flags: one is an error naming the command.
func parseAll(fs *flag.FlagSet, args []string) error {
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	return nil
}

// parseInterleaved parses flags that may come after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := cli.Parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func cmdConfigure(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("lnk agent configure", flag.ContinueOnError)
	usageOf(fs, "lnk agent configure --spec FILE [--home DIR | --agent NAME]",
		"Checks the agent's spec (TOML: [model], [window], [storage], [instructions]) and writes\nit as the agent's config.json, which each turn reads.")
	spec := fs.String("spec", "", "the agent's spec, a TOML file")
	agent := agentFlags(fs, getenv)
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

func cmdChatShow(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("lnk agent chat show", flag.ContinueOnError)
	usageOf(fs, "lnk agent chat show THREAD [--summaries] [--home DIR | --agent NAME]",
		"Prints the conversation's copy for people, made from its events. With --summaries, each summary\nthe model wrote of what left its window is shown too, where it was written, marked as one.")
	withSummaries := fs.Bool("summaries", false, "show the summaries the model reads in place of what left its window")
	a, pos, opener, err := chatCommand(fs, args, getenv, 1, "lnk agent chat show takes one THREAD")
	if err != nil {
		return err
	}
	defer opener.Close()
	r := &turn.Runner{Agent: a, Open: opener.Open}
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

// chatCommand parses a chat command's args with fs (which has its usage
// set), wanting n positional arguments (else the usage error says), and
// returns the agent, the positional arguments and the opener of its
// conversations, which the caller closes.
func chatCommand(fs *flag.FlagSet, args []string, getenv func(string) string, n int, says string) (home.Agent, []string, *stores.Opener, error) {
	agent := agentFlags(fs, getenv)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return home.Agent{}, nil, nil, err
	}
	if len(pos) != n {
		return home.Agent{}, nil, nil, usageError(says)
	}
	a, err := agent()
	if err != nil {
		return home.Agent{}, nil, nil, err
	}
	opener, err := stores.FromEnv(getenv)
	if err != nil {
		return home.Agent{}, nil, nil, err
	}
	return a, pos, opener, nil
}
