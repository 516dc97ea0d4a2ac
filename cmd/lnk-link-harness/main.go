// Command lnk-link-harness takes an LLM agent's turns for Link: a message
// comes in over HTTP, the turn reads what it needs of the conversation from
// the agent's home, calls the model through Link's model proxy, and appends
// every event once.
//
//	lnk-link-harness serve --home DIR --listen ADDR --key-file F [--agent NAME]
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
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/turn"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: lnk-link-harness serve --home DIR --listen ADDR --key-file F [--agent NAME]")
		os.Exit(2)
	}
	if err := serve(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "lnk-link-harness:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	homeDir := fs.String("home", "", "the agent's home folder")
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	keyFile := fs.String("key-file", "", "a file holding the agent's key on one line")
	agent := fs.String("agent", "", "the agent's name (default: the home folder's name)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file when stopped")
	agents := fs.String("agents", "", "serve many agents of one owner, from a TOML file")
	blank := fs.String("blank", "", "start a blank unit bound by one line on this unix socket")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *agents != "" || *blank != "" {
		return errors.New("--agents and --blank are not in this version: serve one agent with --home")
	}
	if *homeDir == "" || *keyFile == "" {
		return errors.New("serve needs --home and --key-file")
	}
	dir, err := filepath.Abs(*homeDir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--home %s is not a folder", *homeDir)
	}
	key, err := readKey(*keyFile)
	if err != nil {
		return err
	}
	name := *agent
	if name == "" {
		name = filepath.Base(dir)
	}
	runner := &turn.Runner{
		Agent: home.Agent{Name: name, Dir: dir},
		Open:  stores.Open,
		HTTP:  &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}},
	}
	srv, err := server.New(server.Agent{Runner: runner, Key: key})
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    server.MaxHeaderBytes,
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-stop:
	}
	// A graceful stop: no new connection is taken, every message already
	// asked is answered, and turns whose caller left run to their end.
	signal.Stop(stop)
	if err := hs.Shutdown(context.Background()); err != nil {
		return err
	}
	srv.Wait()
	return nil
}

func readKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--key-file: %w", err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" || strings.ContainsAny(key, "\n\r") {
		return "", fmt.Errorf("--key-file %s: want the key on one line", path)
	}
	if len(key) < 16 {
		return "", fmt.Errorf("--key-file %s: a key of %d bytes is too short (16 at least)", path, len(key))
	}
	return key, nil
}
