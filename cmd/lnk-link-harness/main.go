// Command lnk-link-harness takes an LLM agent's turns for Link: a message
// comes in over HTTP, the turn reads what it needs of the conversation from
// the agent's home, calls the model through Link's model proxy, and appends
// every event once.
//
//	lnk-link-harness serve --home DIR --listen ADDR --key-file F [--agent NAME]
//	lnk-link-harness serve --agents FILE
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: lnk-link-harness serve --home DIR --listen ADDR --key-file F [--agent NAME]\n       lnk-link-harness serve --agents FILE")
		os.Exit(2)
	}
	if err := serve(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "lnk-link-harness:", err)
		os.Exit(1)
	}
}

// unit is one agent to serve: its name, home, key and address.
type unit struct {
	Name    string `toml:"name"`
	Home    string `toml:"home"`
	Listen  string `toml:"listen"`
	KeyFile string `toml:"key_file"`
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	homeDir := fs.String("home", "", "the agent's home folder")
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	keyFile := fs.String("key-file", "", "a file holding the agent's key on one line")
	agent := fs.String("agent", "", "the agent's name (default: the home folder's name)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file when stopped")
	agents := fs.String("agents", "", "serve many agents of one owner, from a TOML file of [[agent]] name, home, listen, key_file")
	blank := fs.String("blank", "", "start a blank unit bound by one line on this unix socket")
	logLevel := fs.String("log-level", "info", "the least level logged, as JSON lines on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	var units []unit
	switch {
	case *blank != "":
		return errors.New("--blank is not in this version: serve agents with --home or --agents")
	case *agents != "":
		if *homeDir != "" || *keyFile != "" {
			return errors.New("--agents names every agent's home and key: give no --home or --key-file with it")
		}
		if units, err = readAgents(*agents); err != nil {
			return err
		}
	case *homeDir == "" || *keyFile == "":
		return errors.New("serve needs --home and --key-file, or --agents FILE")
	default:
		units = []unit{{Name: *agent, Home: *homeDir, Listen: *listen, KeyFile: *keyFile}}
	}
	// One client for the model proxy, its connections shared by every agent.
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}}
	var served []server.Agent
	for _, u := range units {
		a, err := u.agent(hc, log)
		if err != nil {
			return err
		}
		served = append(served, a)
	}
	srv, err := server.New(server.Options{Log: log}, served...)
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
	// Each agent on its own port, as itself; a request naming another agent
	// needs that agent's key.
	var servers []*http.Server
	errc := make(chan error, len(units))
	for i, u := range units {
		ln, err := net.Listen("tcp", u.Listen)
		if err != nil {
			for _, hs := range servers {
				hs.Close()
			}
			return fmt.Errorf("agent %s: %w", served[i].Runner.Agent.Name, err)
		}
		if len(units) == 1 {
			fmt.Printf("listening on %s\n", ln.Addr())
		} else {
			fmt.Printf("listening on %s for %s\n", ln.Addr(), served[i].Runner.Agent.Name)
		}
		hs := &http.Server{
			Handler:           srv,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    server.MaxHeaderBytes,
		}
		servers = append(servers, hs)
		go func() { errc <- hs.Serve(ln) }()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-stop:
	}
	// A graceful stop: no new connection is taken, every message already
	// asked is answered, and turns whose caller left run to their end.
	signal.Stop(stop)
	stopping := time.Now()
	running := srv.Running()
	log.Info("stopping", "turns", running)
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); hs.Shutdown(context.Background()) }()
	}
	wg.Wait()
	srv.Wait()
	log.Info("stopped", "turns", running, "seconds", time.Since(stopping).Seconds())
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// newLogger is the process's one logger: JSON lines on stderr from level
// on.
func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// agent makes the served agent of u.
func (u unit) agent(hc *http.Client, log *slog.Logger) (server.Agent, error) {
	dir, err := filepath.Abs(u.Home)
	if err != nil {
		return server.Agent{}, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return server.Agent{}, fmt.Errorf("home %s is not a folder", u.Home)
	}
	if err := holdHome(dir); err != nil {
		return server.Agent{}, err
	}
	key, err := readKey(u.KeyFile)
	if err != nil {
		return server.Agent{}, err
	}
	name := u.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	if err := home.Plain(name); err != nil {
		return server.Agent{}, fmt.Errorf("agent name %q: %w", name, err)
	}
	agent := home.Agent{Name: name, Dir: dir}
	servers, _ := tools.FromEnviron(os.Environ()) // a variable that names no usable tool offers none
	m := &metrics.Agent{Name: name}
	return server.Agent{Key: key, Runner: &turn.Runner{
		Agent: agent, Open: stores.Options{Synced: m.Synced, Log: log}.Open, HTTP: hc, Metrics: m, Log: log,
		Tools: tools.New(agent, servers, tools.Options{Log: log}),
	}}, nil
}

// readAgents reads serve --agents' file, strictly.
func readAgents(path string) ([]unit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Agent []unit `toml:"agent"`
	}
	dec := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("%s:%d: %v", path, row, err)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(f.Agent) == 0 {
		return nil, fmt.Errorf("%s names no [[agent]]", path)
	}
	for i, u := range f.Agent {
		if u.Home == "" || u.KeyFile == "" {
			return nil, fmt.Errorf("%s: agent %d needs home and key_file", path, i+1)
		}
		if u.Listen == "" {
			f.Agent[i].Listen = "127.0.0.1:0"
		}
	}
	return f.Agent, nil
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
