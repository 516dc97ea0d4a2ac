package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"lnk.dev/linkharness/loadgen/scripted"
)

// cmdScriptedModel is `lnk scripted-model`: the scripted model, serving
// until SIGINT or SIGTERM, then stopping once the answers under way are
// given.
func cmdScriptedModel(args []string) error {
	fs := flag.NewFlagSet("scripted-model", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lnk scripted-model [--listen ADDR] [--script FILE]\n\nServes the scripted model: Anthropic's and OpenAI's wire formats, answering as the script\nsays (default: \"ok: \" and a digest of each message, at once).\n\nflags:")
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	scriptFile := fs.String("script", "", "the script, a TOML file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("scripted-model: unexpected arguments %q", fs.Args())
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("scripted-model: %w", err)
	}
	srv := scripted.New(script)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("listening on %s\n", ln.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("scripted-model: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal ends the program at once
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("scripted-model: stopping: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("scripted-model: %w", err)
	}
	return nil
}
