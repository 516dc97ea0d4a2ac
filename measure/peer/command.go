package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
)

// Command is a harness driven by one command per message, as Peer drives
// Claude Code, Codex, opencode and pi: each agent gets its own HOME (its
// settings written there, the scripted model's address put in) and a git
// workspace; its first message runs First and every later one Next, with
// {text} replaced by the message. Each agent is a unit of its own: a
// harness like this runs a process per agent.
//
// Per message it counts the command's CPU (user and system, its reaped
// descendants included, from wait4), its peak resident memory and its
// block I/O. Idle, when set, is the program as a person runs it,
// interactive: it is started in a terminal of its own for the quiet
// window only, and its process tree's memory and CPU are its idle cost.
type Command struct {
	Label   string   // the harness's name, as the table shows it
	Version string   // as the program says it, for the record
	First   []string // the first message's command; {text} is the message
	Next    []string // every later message's command
	Idle    []string // the interactive program, for idle memory; nil for none

	// Env is added to the environment (measure's own, less every LNK_
	// variable), HOME set to the agent's home; {model} is the scripted
	// model's host:port, {workspace} the workspace.
	Env []string

	// Files are written under HOME before the first message, path to
	// contents, with MODEL_ADDR and WORKSPACE replaced as Env's.
	Files map[string]string
}

// Name implements drive.Harness.
func (c *Command) Name() string { return c.Label }

// Start implements drive.Harness: it makes the agent's HOME and workspace. No
// process runs until a message.
func (c *Command) Start(ctx context.Context, agents []drive.Agent) (drive.Unit, error) {
	if len(agents) != 1 {
		return nil, fmt.Errorf("%w: %s runs a process per agent, asked for %d agents in one", drive.ErrUnsupported, c.Label, len(agents))
	}
	if len(c.First) == 0 || len(c.Next) == 0 {
		return nil, fmt.Errorf("%w: %s has no command for a message", ErrConfig, c.Label)
	}
	a := agents[0]
	u := &commandUnit{c: c, agent: a, ws: filepath.Join(a.Home, "workspace")}
	addr := strings.TrimPrefix(strings.TrimPrefix(a.Model, "http://"), "https://")
	u.repl = strings.NewReplacer("{model}", addr, "{workspace}", u.ws, "MODEL_ADDR", addr, "WORKSPACE", u.ws)
	if err := os.MkdirAll(u.ws, 0o700); err != nil {
		return nil, fmt.Errorf("measure: %s: %w", c.Label, err)
	}
	for path, body := range c.Files {
		p := filepath.Join(a.Home, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("measure: %s: %w", c.Label, err)
		}
		if err := os.WriteFile(p, []byte(u.repl.Replace(body)), 0o600); err != nil {
			return nil, fmt.Errorf("measure: %s: %w", c.Label, err)
		}
	}
	// A small git workspace, as the peers expect one.
	git := exec.CommandContext(ctx, "git", "init", "-q", u.ws)
	if out, err := git.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("measure: %s: git init: %v: %s", c.Label, err, out)
	}
	if err := os.WriteFile(filepath.Join(u.ws, "README.md"), []byte("A workspace for measuring.\n"), 0o600); err != nil {
		return nil, fmt.Errorf("measure: %s: %w", c.Label, err)
	}
	u.env = drive.HarnessEnv(os.Environ(), a.Model)
	u.env = append(u.env[:len(u.env)-1], "HOME="+a.Home) // no LNK_MODEL_PROXY: it is no Link harness
	for _, kv := range c.Env {
		u.env = append(u.env, u.repl.Replace(kv))
	}
	return u, nil
}

// commandUnit is one agent of a Command. Its methods are safe for
// concurrent use, though its messages run one at a time.
type commandUnit struct {
	c     *Command
	agent drive.Agent
	ws    string
	env   []string
	repl  *strings.Replacer

	send sync.Mutex // one message at a time: each continues the last

	mu      sync.Mutex
	sent    map[string]bool // threads with a first message
	used    proc.Sample     // what every message's command cost, summed
	peakRSS uint64          // the largest command's resident bytes
	idle    *exec.Cmd       // the interactive program, once started
	pty     *os.File        // its terminal's master side
	idleErr chan error
}

// maxOutput bounds what a command's answer may print.
const maxOutput = 16 << 20

// killTimeout bounds how long Kill waits for the interactive program,
// killed, to be reaped.
const killTimeout = 15 * time.Second

// PID implements Unit: the interactive program once started, else 0.
func (u *commandUnit) PID() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.idle == nil {
		return 0
	}
	return u.idle.Process.Pid
}

// Send implements Unit: it runs the message's command and waits for it.
func (u *commandUnit) Send(ctx context.Context, agent, thread string, m drive.Message) (drive.Reply, error) {
	u.send.Lock()
	defer u.send.Unlock()
	u.mu.Lock()
	if u.sent == nil {
		u.sent = map[string]bool{}
	}
	argv := u.c.Next
	if !u.sent[thread] {
		argv = u.c.First
	}
	u.mu.Unlock()
	args := make([]string, len(argv))
	for i, s := range argv {
		args[i] = strings.ReplaceAll(s, "{text}", m.Text)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = u.ws
	cmd.Env = u.env
	var out, errOut bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: maxOutput}
	cmd.Stderr = &limitWriter{w: &errOut, n: 64 << 10}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	latency := time.Since(start)
	if cmd.Process != nil {
		// Whatever it left running goes with it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			u.mu.Lock()
			u.used.CPUNanos += uint64(ru.Utime.Nano() + ru.Stime.Nano())
			u.used.ReadBytes += uint64(ru.Inblock) * 512
			u.used.WriteBytes += uint64(ru.Oublock) * 512
			u.peakRSS = max(u.peakRSS, uint64(ru.Maxrss)*1024)
			u.mu.Unlock()
		}
	}
	if err != nil {
		return drive.Reply{}, fmt.Errorf("measure: %s: message %s: %v: %s", u.c.Label, m.ID, err, tail(errOut.Bytes(), 400))
	}
	text := strings.TrimSpace(out.String())
	if text == "" {
		return drive.Reply{}, fmt.Errorf("measure: %s: message %s: no answer printed: %s", u.c.Label, m.ID, tail(errOut.Bytes(), 400))
	}
	u.mu.Lock()
	u.sent[thread] = true
	u.mu.Unlock()
	return drive.Reply{Seq: 1, Text: text, Latency: latency}, nil
}

// Usage implements UsageCounter.
func (u *commandUnit) Usage() proc.Sample {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.used
	s.Time = time.Now()
	return s
}

// PeakRSS implements UsageCounter.
func (u *commandUnit) PeakRSS() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.peakRSS
}

// StartIdle implements IdleStarter: the interactive program, in a terminal
// of its own, in the workspace.
func (u *commandUnit) StartIdle(ctx context.Context) error {
	if len(u.c.Idle) == 0 {
		return nil
	}
	master, slave, err := openPTY()
	if err != nil {
		return fmt.Errorf("measure: %s: %w", u.c.Label, err)
	}
	defer slave.Close()
	cmd := exec.Command(u.c.Idle[0], u.c.Idle[1:]...)
	cmd.Dir = u.ws
	cmd.Env = append(u.env, "TERM=xterm-256color", "COLUMNS=100", "LINES=30")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		master.Close()
		return fmt.Errorf("measure: %s: starting %s: %w", u.c.Label, u.c.Idle[0], err)
	}
	go io.Copy(io.Discard, master) // what it draws
	u.mu.Lock()
	u.idle, u.pty = cmd, master
	u.idleErr = make(chan error, 1)
	u.mu.Unlock()
	go func() { u.idleErr <- cmd.Wait() }()
	return nil
}

// Stop implements Unit: the interactive program, if started, and all it
// started are ended.
func (u *commandUnit) Stop(ctx context.Context) error {
	u.Kill()
	return nil
}

// Kill implements Unit.
func (u *commandUnit) Kill() {
	u.mu.Lock()
	cmd, pty, done := u.idle, u.pty, u.idleErr
	u.idle = nil
	u.mu.Unlock()
	if cmd == nil {
		return
	}
	// Its descendants, some of which leave its session (Codex's
	// app-server), then the program.
	for _, pid := range proc.Descendants(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(killTimeout):
	}
	pty.Close()
}

// limitWriter keeps the first n bytes written and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if l.n > 0 {
		k := min(len(b), l.n)
		l.w.Write(b[:k])
		l.n -= k
	}
	return len(b), nil
}

func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var errNoPTY = errors.New("no terminal")
