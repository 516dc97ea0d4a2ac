package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
)

// cmdScriptedModel is `lnk scripted-model`: the scripted model, serving
// until SIGINT or SIGTERM, then stopping once the answers under way are
// given.
func cmdScriptedModel(args []string) error {
	fs := flag.NewFlagSet("scripted-model", flag.ContinueOnError)
	usageOf(fs, "lnk scripted-model [--listen ADDR] [--script FILE]",
		"Serves the scripted model: Anthropic's and OpenAI's wire formats, answering as the script\nsays (default: \"ok: \" and a digest of each message, at once).")
	listen := listenFlag(fs)
	scriptFile := fs.String("script", "", "the script, a TOML file")
	if err := parseAll(fs, args); err != nil {
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

	return serveUntilSignal("scripted-model", *listen, scripted.New(script), nil, 10*time.Second, nil)
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
