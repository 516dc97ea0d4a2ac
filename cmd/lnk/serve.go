package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
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
