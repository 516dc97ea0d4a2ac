package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/durable"
)

func cmdUse(args []string, getenv func(string) string) error {
	fs := flag.NewFlagSet("lnk agent use", flag.ContinueOnError)
	usageOf(fs, "lnk agent use --harness NAME [--home DIR | --agent NAME]",
		"Chooses the harness that answers for the agent, and writes it as the agent's harness.json.\nKNOWN maps a name to its plugin and program (link is the plugin link-harness, the program\nlnk-link-harness); any other name x is the program lnk-x, which must be on PATH.")
	name := fs.String("harness", "", "the harness's name: link, or x for a program lnk-x on PATH")
	agent := agentFlags(fs, getenv)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usageError("lnk agent use needs --harness NAME")
	}
	a, err := agent()
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
