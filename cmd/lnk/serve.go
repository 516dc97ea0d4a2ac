package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/loadgen/files"
	"lnk.dev/linkharness/loadgen/memory"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/driver"
)

// servable is what serveUntilSignal runs: an *http.Server, or a server built
// on one.
type servable interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// serveUntilSignal listens on addr, prints "listening on ADDR" and what
// follows it (say, may be nil), and serves until SIGINT or SIGTERM; then it
// stops taking connections and lets the calls under way finish, for at most
// grace, calling beforeStop (may be nil) first. A second signal ends the
// program at once. Every lnk command that serves stops this way.
func serveUntilSignal(name, addr string, srv servable, say func(net.Addr) string, grace time.Duration, beforeStop func(context.Context)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	line := "listening on " + ln.Addr().String()
	if say != nil {
		line += say(ln.Addr())
	}
	fmt.Println(line)
	select {
	case err := <-served:
		return fmt.Errorf("%s: %w", name, err)
	case <-ctx.Done():
	}
	stop()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if beforeStop != nil {
		beforeStop(sctx)
	}
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("%s: stopping: %w", name, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

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

// cmdToolServer is `lnk tool-server memory|file --listen ADDR --home DIR`:
// one of the built-in tool servers over an agent's home, for running Link
// Harness alone and for load. It speaks streamable HTTP at /mcp and HTTP+SSE
// at /sse, serving until SIGINT or SIGTERM.
func cmdToolServer(fs flags, args []string, _ func(string) string) error {
	homeDir := fs.String("home", "", "the agent's home folder")
	if len(args) == 1 && isHelp(args[0]) {
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return nil
	}
	if len(args) == 0 || (args[0] != "memory" && args[0] != "file") {
		fs.Usage()
		return usageError("tool-server: name memory or file")
	}
	which := args[0]
	if err := cli.Parse(fs.FlagSet, args[1:]); err != nil {
		return err
	}
	if *homeDir == "" || fs.NArg() > 0 {
		return usageError("tool-server: --home DIR is needed, and nothing more")
	}
	var mcp *server.MCPServer
	if which == "memory" {
		mcp = memory.New(*homeDir, nil)
	} else {
		var err error
		if mcp, err = files.New(*homeDir, nil); err != nil {
			return fmt.Errorf("tool-server: %w", err)
		}
	}

	sse := server.NewSSEServer(mcp)
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(mcp))
	mux.Handle("/sse", sse)
	mux.Handle("/message", sse)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	say := func(a net.Addr) string {
		return fmt.Sprintf(": http://%[1]s/mcp (streamable HTTP), http://%[1]s/sse (SSE)", a)
	}
	return serveUntilSignal("tool-server", *fs.listen, srv, say, 10*time.Second, func(ctx context.Context) { sse.Shutdown(ctx) })
}

// cmdStoreBridge is `lnk store-bridge`: a store driver's methods over HTTP,
// for a harness whose sandbox must not hold what the driver needs to reach
// its store. The driver runs here as its plugin program, lnk-<driver>
// beside this program or on PATH; each call is proved with the agent's key.
// It serves until SIGINT or SIGTERM, then lets the calls under way finish.
func cmdStoreBridge(fs flags, args []string, _ func(string) string) error {
	home := fs.String("home", "", "the agent's home, handed to the driver")
	name := fs.String("driver", "", "the driver: the program lnk-NAME")
	keyFile := fs.String("key-file", "", "a file holding the agent's key on one line")
	if err := fs.parseAll(args); err != nil {
		return err
	}
	if *home == "" || *name == "" || *keyFile == "" {
		return usageError("store-bridge: --home, --driver and --key-file are needed")
	}
	key, err := cli.ReadKey(*keyFile)
	if err != nil {
		return fmt.Errorf("store-bridge: %w", err)
	}
	if key == "" {
		return fmt.Errorf("store-bridge: %s holds no key", *keyFile)
	}
	abs, err := filepath.Abs(*home)
	if err != nil {
		return fmt.Errorf("store-bridge: %w", err)
	}
	prog, err := driver.Find(*name)
	if err != nil {
		return fmt.Errorf("store-bridge: %w", err)
	}
	d := driver.New(driver.NewProcess(prog, "--home", abs))
	defer d.Close()

	srv := &http.Server{
		Handler:           driver.Handler(d, []byte(key)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	return serveUntilSignal("store-bridge", *fs.listen, srv, nil, driver.CallTimeout+5*time.Second, nil)
}
