package main

import (
	"fmt"
	"os"

	"lnk.dev/linkharness/loadgen/scripted"
)

// readScript reads and parses the scripted model's script at path for
// the command cmd, or returns nil (the default script) when path is "".
func readScript(cmd, path string) (*scripted.Script, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: --script: %w", cmd, err)
	}
	s, err := scripted.ParseScript(b)
	if err != nil {
		return nil, fmt.Errorf("%s: --script %s: %w", cmd, path, err)
	}
	return s, nil
}
