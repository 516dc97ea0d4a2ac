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
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"
	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/cmd/internal/stores"
	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/server"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
)

const usage = `usage: lnk-link-harness serve --home DIR --key-file F [--listen ADDR] [--agent NAME]
       lnk-link-harness serve --agents FILE

Takes an agent's turns over HTTP. The model is reached through Link's model
proxy: LNK_MODEL_PROXY, or LNK_MODEL_PROXY_<PROVIDER> for one provider.
lnk-link-harness serve --help lists serve's flags.`

func main() {
	if len(os.Args) == 2 && isHelp(os.Args[1]) {
		fmt.Println(usage)
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	opener, err := stores.FromEnv(os.Getenv)
	if err == nil {
		err = serve(os.Args[2:], os.Environ(), opener)
		opener.Close()
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "lnk-link-harness:", err)
		os.Exit(1)
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// unit is one agent to serve: its name, home, key and address.
type unit struct {
	Name    string `toml:"name"`
	Home    string `toml:"home"`
	Listen  string `toml:"listen"`
	KeyFile string `toml:"key_file"`
}

// serve serves the agents args name, in the environment environ, opening
// their conversations with opener.
func serve(args, environ []string, opener *stores.Opener) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lnk-link-harness serve --home DIR --key-file F [--listen ADDR] [--agent NAME]\n       lnk-link-harness serve --agents FILE\n\nServes the agents' turns over HTTP, printing \"listening on ADDR\" for each. It refuses to\nstart without a model proxy for an agent's provider (LNK_MODEL_PROXY, or\nLNK_MODEL_PROXY_<PROVIDER>), or with a [storage] conversations it cannot keep.\n\nflags:")
		fs.PrintDefaults()
	}
	homeDir := fs.String("home", "", "the agent's home folder")
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on; port 0 picks a free one")
	keyFile := fs.String("key-file", "", "a file holding the agent's key on one line")
	agent := fs.String("agent", "", "the agent's name (default: the home folder's name)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file when stopped")
	agents := fs.String("agents", "", "serve many agents of one owner, from a TOML file of [[agent]] name, home, listen, key_file")
	blank := fs.String("blank", "", "start a blank unit bound by one line on this unix socket")
	logLevel := fs.String("log-level", "info", "the least level logged, as JSON lines on stderr: debug, info, warn or error")
	grace := fs.Duration("grace", 30*time.Second, "on SIGTERM or SIGINT, how long running turns may go on before they are ended (a second signal ends them at once)")
	idleFree := fs.Duration("idle-free", server.DefaultIdleFree, "once no turn has run for this long after the last one ended, give the memory the turns freed back to the system; 0 never")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if *grace < 0 {
		return fmt.Errorf("--grace %v: want a duration of 0 or more", *grace)
	}
	if *idleFree < 0 {
		return fmt.Errorf("--idle-free %v: want a duration of 0 or more", *idleFree)
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
		var err error
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
	getenv := lookup(environ)
	// Done once a graceful stop's grace is over: every running turn ends.
	ending, endTurns := context.WithCancel(context.Background())
	defer endTurns()
	var served []server.Agent
	for _, u := range units {
		a, held, err := u.agent(hc, environ, opener, log, ending)
		if err != nil {
			return err
		}
		defer held.Close()
		if err := ready(a.Runner, getenv, opener); err != nil {
			return err
		}
		served = append(served, a)
	}
	opts := server.Options{Log: log}
	if *idleFree > 0 {
		opts.FreeMemory, opts.IdleFree = freeMemory, *idleFree
	}
	srv, err := server.New(opts, served...)
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
	// The signals are caught before the first "listening on" line: a
	// supervisor may stop the process as soon as it reads one, and a SIGTERM
	// before Notify would end it at once, with nothing stopped gracefully.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(stop)
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
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-stop:
	}
	// A graceful stop: no new connection is taken, every message already
	// asked is answered, and turns whose caller left run to their end, for
	// the grace; then (or at a second signal) the turns still running are
	// ended, what they wrote kept for the next turn, and their callers told
	// 503.
	stopping := time.Now()
	running := srv.Running()
	log.Info("stopping", "turns", running, "grace_seconds", grace.Seconds())
	over := time.AfterFunc(*grace, func() {
		log.Warn("grace over: ending the running turns", "turns", srv.Running())
		endTurns()
	})
	defer over.Stop()
	go func() {
		select {
		case <-stop:
			log.Warn("a second signal: ending the running turns", "turns", srv.Running())
			endTurns()
		case <-ending.Done():
		}
	}()
	// A connection that is no turn's (a slow body) is closed a little after
	// the grace, so the process exits within it and that margin.
	closing, stopClosing := context.WithTimeout(context.Background(), *grace+stopMargin)
	defer stopClosing()
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if hs.Shutdown(closing) != nil {
				hs.Close()
			}
		}()
	}
	wg.Wait()
	srv.Wait()
	log.Info("stopped", "turns", running, "seconds", time.Since(stopping).Seconds())
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// freeMemory gives the heap a burst of turns freed back to the system. The
// first collection moves what sync.Pools hold (the HTTP server's buffers,
// the turns' windows) to their victim caches, the second frees it, and
// FreeOSMemory's own collection then returns every free page at once
// rather than at the background scavenger's pace.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// stopMargin is how long past the grace a graceful stop waits for a
// connection that is no turn's before it closes it.
const stopMargin = 5 * time.Second

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

// agent makes the served agent of u, in the environment environ, and
// returns it with its home held (holdHome) and its own opener, which
// reaches the stores the way opener does, times its fsyncs into the
// agent's metrics and logs its drivers' starts; closing the returned
// Closer lets go of both.
func (u unit) agent(hc *http.Client, environ []string, opener *stores.Opener, log *slog.Logger, stop context.Context) (server.Agent, io.Closer, error) {
	dir, err := filepath.Abs(u.Home)
	if err != nil {
		return server.Agent{}, nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return server.Agent{}, nil, fmt.Errorf("home %s is not a folder", u.Home)
	}
	key, err := readKey(u.KeyFile)
	if err != nil {
		return server.Agent{}, nil, err
	}
	name := u.Name
	if name == "" {
		name = filepath.Base(dir)
	}
	if err := home.Plain(name); err != nil {
		return server.Agent{}, nil, fmt.Errorf("agent name %q: %w", name, err)
	}
	held, err := holdHome(dir)
	if err != nil {
		return server.Agent{}, nil, err
	}
	agent := home.Agent{Name: name, Dir: dir}
	servers, _ := tools.FromEnviron(environ) // a variable that names no usable tool offers none
	m := &metrics.Agent{Name: name}
	own := &stores.Opener{Bridge: opener.Bridge, BridgeKey: opener.BridgeKey, Synced: m.Synced, Log: log}
	r := &turn.Runner{
		Agent: agent, Getenv: lookup(environ), Open: own.Open, HTTP: hc, Metrics: m, Log: log, Stop: stop,
		Tools: tools.New(agent, servers, tools.Options{Log: log}),
	}
	return server.Agent{Key: key, Runner: r}, closers{held, own}, nil
}

// ready says why the agent r serves cannot take a turn as its settings
// stand, before it is served: its settings cannot be read, its
// conversations' kind is not one opener keeps, or no model proxy reaches
// its model's provider (or its fallback's). Each turn reads the settings
// again, and fails with the same error when one of these comes later.
func ready(r *turn.Runner, getenv func(string) string, opener *stores.Opener) error {
	path, err := r.Agent.Path(home.Config, "")
	if err != nil {
		return err
	}
	s, err := settings.Read(path)
	if err != nil {
		return fmt.Errorf("agent %s: %w", r.Agent.Name, err)
	}
	if err := opener.Check(r.Agent.Dir, s.Storage.Conversations); err != nil {
		return fmt.Errorf("agent %s: [storage] conversations: %w", r.Agent.Name, err)
	}
	factsPath, err := facts.UserPath(getenv)
	if err != nil {
		return err
	}
	book, err := facts.Load(factsPath)
	if err != nil {
		return err
	}
	for _, m := range []struct {
		what string
		settings.Model
	}{{"model", s.Model}, {"fallback model", settings.Model{Name: s.Model.Fallback}}} {
		if m.Name == "" {
			continue
		}
		provider := m.Provider
		if provider == "" {
			f := book.Model(m.Name)
			provider = f.Provider.Value
		}
		if _, err := model.New(provider, getenv, nil); err != nil {
			return fmt.Errorf("agent %s: %s %s: %w", r.Agent.Name, m.what, m.Name, err)
		}
	}
	return nil
}

// lookup reads environ, a copy of the environment as os.Environ gives it:
// the last setting of a name counts.
func lookup(environ []string) func(string) string {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return func(k string) string { return env[k] }
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
	key, err := cli.ReadKey(path)
	if err != nil {
		return "", fmt.Errorf("--key-file: %w", err)
	}
	if key == "" || strings.ContainsAny(key, "\n\r") {
		return "", fmt.Errorf("--key-file %s: want the key on one line", path)
	}
	if len(key) < 16 {
		return "", fmt.Errorf("--key-file %s: a key of %d bytes is too short (16 at least)", path, len(key))
	}
	return key, nil
}

// closers closes each of its Closers, in order.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
