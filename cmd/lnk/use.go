package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
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
