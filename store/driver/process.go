package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// IdleTimeout is how long a plugin program lives with no call to answer.
const IdleTimeout = 10 * time.Second

// Process is the Transport to a plugin program: a child process started by
// the first call, given the calls on its standard input and answering on
// its standard output, ended once idle. It is safe for concurrent use; the
// zero value is not usable: use NewProcess.
type Process struct {
	name string // for errors: lnk-<name>
	path string
	args []string

	// Idle is how long the child lives with no call in flight; zero means
	// IdleTimeout. Stderr gets the child's standard error; nil means this
	// process's. Log gets a line when the child starts, and when it starts
	// again after it ended; nil logs nothing. Set them before the first call.
	Idle   time.Duration
	Stderr io.Writer
	Log    *slog.Logger
	// Env is the child's environment, as os.Environ gives one; nil means
	// this process's. Set it before the first call.
	Env []string

	// wmu serializes writes to the child's standard input.
	wmu sync.Mutex

	// mu guards the fields below.
	mu     sync.Mutex
	child  *child // nil when none runs
	nextID int64
	closed bool
	starts int    // children started
	ended  string // why the last child ended: "idle", or what went wrong
}

// child is one run of the program.
type child struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	pending  map[int64]chan answer // by id, guarded by Process.mu
	inflight int                   // guarded by Process.mu
	idle     *time.Timer           // guarded by Process.mu
	done     chan struct{}         // closed when its answers end
	err      error                 // why they ended, set before done closes
	stopped  string                // why it was ended from here, guarded by Process.mu; "" when it ended itself
}

// NewProcess returns the transport to the program at path, run with args.
func NewProcess(path string, args ...string) *Process {
	return &Process{name: filepath.Base(path), path: path, args: args}
}

// Find returns the plugin program lnk-<name>: the one beside the running
// program if there is one, so a build's programs go together, or else the
// one on PATH.
func Find(name string) (string, error) {
	prog := "lnk-" + name
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		return "", fmt.Errorf("driver %s: no program %s beside this one or on PATH", name, prog)
	}
	return p, nil
}

// Call sends one request to the child, starting it if none runs. When ctx
// is done before the answer, the child is killed: a call past its time
// must not go on to write.
func (p *Process) Call(ctx context.Context, method string, params []byte) ([]byte, error) {
	c, id, ch, err := p.begin()
	if err != nil {
		return nil, err
	}
	defer p.end(c, id)
	line := appendRequest(nil, id, method, params)
	p.wmu.Lock()
	_, err = c.stdin.Write(line)
	p.wmu.Unlock()
	if err != nil {
		p.kill(c)
		return nil, fmt.Errorf("driver %s: %s: writing the request: %w", p.name, method, err)
	}
	select {
	case a := <-ch:
		if a.Error != nil {
			return nil, &CallError{Driver: p.name, Method: method, Code: a.Error.Code, Message: a.Error.Message}
		}
		return a.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("driver %s: %s: the program ended: %v", p.name, method, c.err)
	case <-ctx.Done():
		p.kill(c)
		return nil, fmt.Errorf("driver %s: %s: %w; the program was stopped", p.name, method, ctx.Err())
	}
}

// begin registers a call, starting the child when none runs.
func (p *Process) begin() (*child, int64, chan answer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, 0, nil, fmt.Errorf("driver %s: closed", p.name)
	}
	if p.child == nil {
		c, err := p.start()
		if err != nil {
			return nil, 0, nil, err
		}
		p.child = c
	}
	c := p.child
	if c.idle != nil {
		c.idle.Stop()
		c.idle = nil
	}
	p.nextID++
	ch := make(chan answer, 1)
	c.pending[p.nextID] = ch
	c.inflight++
	return c, p.nextID, ch, nil
}

// end forgets a call; the last one out starts the idle timer.
func (p *Process) end(c *child, id int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(c.pending, id)
	c.inflight--
	if c.inflight == 0 && p.child == c {
		idle := p.Idle
		if idle <= 0 {
			idle = IdleTimeout
		}
		c.idle = time.AfterFunc(idle, func() { p.stopIdle(c) })
	}
}

// start starts the program. The caller holds p.mu.
func (p *Process) start() (*child, error) {
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.Env
	cmd.Stderr = p.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", p.name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("driver %s: %w", p.name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("driver %s: start: %w", p.name, err)
	}
	c := &child{cmd: cmd, stdin: stdin, pending: make(map[int64]chan answer), done: make(chan struct{})}
	go p.answers(c, stdout)
	p.starts++
	if p.Log != nil {
		if p.starts == 1 {
			p.Log.Info("driver started", "driver", p.name, "pid", cmd.Process.Pid)
		} else {
			p.Log.Info("driver restarted", "driver", p.name, "pid", cmd.Process.Pid, "starts", p.starts, "after", p.ended)
		}
	}
	return c, nil
}

// answers hands each answer line to its call until the child's output
// ends, then reaps the child.
func (p *Process) answers(c *child, stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(r, MaxLine)
		if len(line) > 0 {
			var a answer
			if jerr := json.Unmarshal(line, &a); jerr != nil {
				err = fmt.Errorf("an answer that is not JSON-RPC: %v", jerr)
				break
			}
			p.mu.Lock()
			ch := c.pending[a.ID]
			p.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = errors.New("its output ended")
	}
	if err != nil {
		c.cmd.Process.Kill()
	}
	werr := c.cmd.Wait()
	if werr != nil {
		err = fmt.Errorf("%v (%v)", err, werr)
	}
	p.mu.Lock()
	if p.child == c {
		p.child = nil
	}
	if c.stopped == "" { // it ended itself; kill and stopIdle say why they ended it
		p.ended = err.Error()
	}
	p.mu.Unlock()
	c.err = err
	close(c.done)
}

// kill ends the child now; calls in flight fail, the next call starts
// another.
func (p *Process) kill(c *child) {
	p.mu.Lock()
	if p.child == c {
		p.child = nil
	}
	c.stopped = "killed: a call past its time, or its input failed"
	p.ended = c.stopped // said now: the next call may start another before this one is reaped
	p.mu.Unlock()
	c.cmd.Process.Kill()
}

// stopIdle ends the child by closing its input, if it is still idle.
func (p *Process) stopIdle(c *child) {
	p.mu.Lock()
	if p.child != c || c.inflight > 0 {
		p.mu.Unlock()
		return
	}
	p.child = nil
	c.stopped = "idle"
	p.ended = c.stopped
	p.mu.Unlock()
	p.stop(c)
}

// stop closes the child's input, which ends it, and kills it if it has not
// ended in a few seconds.
func (p *Process) stop(c *child) {
	c.stdin.Close()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.cmd.Process.Kill()
		<-c.done
	}
}

// Running says whether a child runs now.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.child != nil
}

// Close ends the child, if one runs, and refuses further calls.
func (p *Process) Close() error {
	p.mu.Lock()
	c := p.child
	p.child, p.closed = nil, true
	if c != nil {
		c.stopped = "closed"
		if c.idle != nil {
			c.idle.Stop()
		}
	}
	p.mu.Unlock()
	if c != nil {
		p.stop(c)
	}
	return nil
}
