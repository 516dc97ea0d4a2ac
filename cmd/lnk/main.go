// Command lnk is Link Harness's tool: it configures an agent, shows its
// conversations, measures what each agent costs, and runs the scripted
// model that tests and measurements talk to.
//
//	lnk agent use --harness NAME [--home DIR | --agent NAME]
//	lnk agent configure --spec FILE [--home DIR | --agent NAME]
//	lnk agent chat list [--home DIR | --agent NAME]
//	lnk agent chat show THREAD [--home DIR | --agent NAME]
//	lnk agent chat convert --to log|compact|DRIVER [--home DIR | --agent NAME]
//	lnk agent chat repair THREAD [--home DIR | --agent NAME]
//	lnk agent chat fork THREAD --before SEQ --text T [--home DIR | --agent NAME]
//	lnk model show NAME
//	lnk measure [flags]
//	lnk loadgen [flags]
//	lnk scripted-model --listen ADDR [--script FILE]
//	lnk tool-server memory|file --listen ADDR --home DIR
//	lnk store-bridge [flags]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	err := run(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lnk:", err)
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, usage(commands()))
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError string

func (u usageError) Error() string { return string(u) }

// run runs the command args name, in the environment getenv reads.
func run(args []string, getenv func(string) string) error {
	if len(args) == 0 {
		return usageError("no command")
	}
	cmds := commands()
	if ok, err := runNamed(cmds, "", args, getenv); ok {
		return err
	}
	if isHelp(args[0]) {
		fmt.Println(usage(cmds))
		return nil
	}
	return usageError(fmt.Sprintf("unknown command %q", args[0]))
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}
