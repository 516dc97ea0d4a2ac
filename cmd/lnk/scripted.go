package main

import (
	"fmt"
	"os"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
)

// cmdScriptedModel is `lnk scripted-model`: the scripted model, serving
// until SIGINT or SIGTERM, then stopping once the answers under way are
// given.
func cmdScriptedModel(fs flags, args []string, _ func(string) string) error {
	scriptFile := fs.String("script", "", "the script, a TOML file")
	if err := fs.parseAll(args); err != nil {
		return err
	}
	var script *scripted.Script
	if *scriptFile != "" {
		b, err := os.ReadFile(*scriptFile)
		if err != nil {
			return fmt.Errorf("scripted-model: %w", err)
		}
		if script, err = scripted.ParseScript(b); err != nil {
			return fmt.Errorf("scripted-model: %s: %w", *scriptFile, err)
		}
	}

	return serveUntilSignal("scripted-model", *fs.listen, scripted.New(script), nil, 10*time.Second, nil)
}

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
