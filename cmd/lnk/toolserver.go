package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"lnk.dev/linkharness/cmd/internal/cli"
	"lnk.dev/linkharness/loadgen/files"
	"lnk.dev/linkharness/loadgen/memory"
)

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
