package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/home"
)

// flags is a command's flag set, made from its entry with the flags its
// kind shares; the command adds its own.
type flags struct {
	*flag.FlagSet
	cmd command
	// agent is an agent command's: the agent its --home or --agent names.
	agent func() (home.Agent, error)
	// listen is a server's --listen.
	listen *string
}

// flags makes c's flag set: its --help says c's synopsis, what it does and
// its flags, and its kind's flags are in it.
func (c command) flags(getenv func(string) string) flags {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n", c.synopsis(c.args), c.does)
		some := false
		fs.VisitAll(func(*flag.Flag) { some = true })
		if some {
			fmt.Fprint(fs.Output(), "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	f := flags{FlagSet: fs, cmd: c}
	switch c.kind {
	case agentCommand:
		f.agent = agentFlags(fs, getenv)
	case serverCommand:
		f.listen = fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	}
	return f
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

// parseAll parses args for a command that takes no argument beside its
// flags: one is an error naming the command.
func (f flags) parseAll(args []string) error {
	if err := cli.Parse(f.FlagSet, args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", f.Name(), f.Args())
	}
	return nil
}

// parseAgent parses an agent command's args, its flags and positional
// arguments in any order; when ok says they are not what the command
// wants, that is the usage error says. It gives the agent they name and
// the positional arguments.
func (f flags) parseAgent(args []string, ok func(pos []string) bool, says string) (home.Agent, []string, error) {
	var pos []string
	for {
		if err := cli.Parse(f.FlagSet, args); err != nil {
			return home.Agent{}, nil, err
		}
		if f.NArg() == 0 {
			break
		}
		pos = append(pos, f.Arg(0))
		args = f.Args()[1:]
	}
	if !ok(pos) {
		return home.Agent{}, nil, usageError(says)
	}
	a, err := f.agent()
	return a, pos, err
}

// threads is a chat command's check of its positional arguments: n
// THREADs.
func threads(n int) func(pos []string) bool {
	return func(pos []string) bool { return len(pos) == n }
}

// chat is what a chat command works on: its agent, its positional
// arguments and the opener of the agent's conversations.
type chat struct {
	agent   home.Agent
	pos     []string
	opener  *stores.Opener
	release func() // lets the agent's home go, for a command of a stopped agent
}

// openChat parses a chat command's args as parseAgent does and opens the
// agent's conversations; a command of a stopped agent holds its home too.
// Close lets go of both.
func (f flags) openChat(args []string, getenv func(string) string, ok func(pos []string) bool, says string) (*chat, error) {
	a, pos, err := f.parseAgent(args, ok, says)
	if err != nil {
		return nil, err
	}
	opener, err := stores.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	c := &chat{agent: a, pos: pos, opener: opener, release: func() {}}
	if f.cmd.stopped {
		what := f.cmd.name[strings.LastIndexByte(f.cmd.name, ' ')+1:]
		if c.release, err = holdStopped(a.Dir, what); err != nil {
			opener.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close lets go of the agent's home, if held, then of its conversations'
// opener.
func (c *chat) Close() {
	c.release()
	c.opener.Close()
}
