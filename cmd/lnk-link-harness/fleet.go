package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"lnk.dev/linkharness/harness/server"
)

// fleet is the agents a process serves, each on its own listener, joining
// and leaving while it runs. Its methods are called from serve's one loop,
// never at once; stopping an agent runs on beside it.
type fleet struct {
	srv     *server.Server
	environ []string // the process's environment
	log     *slog.Logger
	ending  context.Context // done once a graceful stop's grace is over
	out     io.Writer       // where "listening on" lines go
	named   bool            // whether a listening line names its agent
	grace   time.Duration   // how long a stopping agent's connections are waited for, with stopMargin
	errc    chan error      // a listener's end other than a stop

	running map[string]*running // by agent name
	leaving sync.WaitGroup      // agents stopping
}

// running is one agent served: its unit, its listener's server, and what
// it holds until it has stopped.
type running struct {
	unit unit
	name string
	hs   *http.Server
	held io.Closer
}

// joining is an agent made and listening, not served yet.
type joining struct {
	running
	agent server.Agent
	ln    net.Listener
}

// prepare makes the agents of units and their listeners, serving none of
// them yet; on an error, what it made is let go of and nothing has
// changed.
func (f *fleet) prepare(units []unit) ([]*joining, error) {
	var made []*joining
	undo := func() {
		for _, j := range made {
			j.ln.Close()
			j.held.Close()
		}
	}
	for _, u := range units {
		a, held, err := u.agent(f.environ, f.log, f.ending)
		if err != nil {
			undo()
			return nil, where(u, err)
		}
		name := a.Runner.Agent.Name
		ln, err := net.Listen("tcp", u.Listen)
		if err != nil {
			held.Close()
			undo()
			return nil, where(u, fmt.Errorf("agent %s: %w", name, err))
		}
		made = append(made, &joining{running: running{unit: u, name: name, held: held}, agent: a, ln: ln})
	}
	return made, nil
}

// where puts the agents file's line of u before err.
func where(u unit, err error) error {
	if u.line == 0 {
		return err
	}
	return fmt.Errorf("agents file line %d: %w", u.line, err)
}

// join serves the agents prepare made, each printing where it listens.
func (f *fleet) join(js []*joining) error {
	for i, j := range js {
		if err := f.srv.Add(j.agent); err != nil {
			for _, rest := range js[i:] {
				rest.ln.Close()
				rest.held.Close()
			}
			return err
		}
		j.hs = &http.Server{
			Handler:           f.srv.For(j.name),
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    server.MaxHeaderBytes,
		}
		r := j.running
		f.running[j.name] = &r
		if f.named {
			fmt.Fprintf(f.out, "listening on %s for %s\n", j.ln.Addr(), j.name)
		} else {
			fmt.Fprintf(f.out, "listening on %s\n", j.ln.Addr())
		}
		go func(hs *http.Server, ln net.Listener) {
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				select {
				case f.errc <- err:
				default: // the process is stopping for an earlier one
				}
			}
		}(j.hs, j.ln)
	}
	return nil
}

// leave stops serving the agent name as a graceful stop does: its
// listener takes no new connection, each it has is answered until its
// client closes it, for the grace and a margin; then the agent's turns
// end (those whose caller left too) and what it holds is let go of. It
// runs on beside the caller; stopAll waits for it.
func (f *fleet) leave(name string) {
	r := f.running[name]
	if r == nil {
		return
	}
	delete(f.running, name)
	f.leaving.Add(1)
	go func() {
		defer f.leaving.Done()
		closing, cancel := context.WithTimeout(context.Background(), f.grace+stopMargin)
		defer cancel()
		if r.hs.Shutdown(closing) != nil {
			r.hs.Close()
		}
		f.srv.Remove(name)
		r.held.Close()
		f.log.Info("agent left", "agent", name)
	}()
}

// reload serves the agents file at path as it reads now: an agent no
// longer in it leaves, a new one joins, and the others are untouched. A
// file that cannot be served (unreadable, malformed, an entry of an agent
// served changed, a new agent's home or key or address not usable)
// changes nothing, and the error says why and where.
func (f *fleet) reload(path string) error {
	units, err := readAgents(path)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	var join []unit
	for _, u := range units {
		name := nameOf(u)
		want[name] = true
		switch r := f.running[name]; {
		case r == nil:
			join = append(join, u)
		case !r.unit.same(u):
			return where(u, fmt.Errorf("agent %s is served with another entry: take it out of the file and send SIGHUP, then put it back changed", name))
		}
	}
	js, err := f.prepare(join)
	if err != nil {
		return err
	}
	var leave []string
	for name := range f.running {
		if !want[name] {
			leave = append(leave, name)
			f.leave(name)
		}
	}
	if err := f.join(js); err != nil {
		return err
	}
	f.log.Info("agents file read again", "file", path, "agents", len(f.running), "joined", len(join), "left", len(leave))
	return nil
}

// nameOf is the name u serves its agent by: its name, or its home
// folder's.
func nameOf(u unit) string {
	if u.Name != "" {
		return u.Name
	}
	return filepath.Base(u.Home)
}

// stopAll stops every agent (see leave) and waits for them all.
func (f *fleet) stopAll() {
	for name := range f.running {
		f.leave(name)
	}
	f.leaving.Wait()
}
