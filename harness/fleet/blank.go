package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/settings"
)

// MaxBindLine is the most bytes a blank unit's control line may hold,
// its newline not counted.
const MaxBindLine = 64 << 10

// bindWait is how long a control connection may take to send its line.
const bindWait = 10 * time.Second

// errBind comes when a control line cannot bind the unit; the unit stays
// blank.
var errBind = errors.New("bind")

// bindLine is a blank unit's control line (API.md, "Serving"): one JSON object
// binding it to an agent.
type bindLine struct {
	Agent    string          `json:"agent"`    // the agent's name; "": its home folder's
	Home     string          `json:"home"`     // its home folder, which must be there
	Listen   string          `json:"listen"`   // where it is served; "": 127.0.0.1:0
	Key      string          `json:"key"`      // made for this binding alone
	Settings json.RawMessage `json:"settings"` // config.json's form, held in memory; absent: config.json each turn
	Store    string          `json:"store"`    // the store bridge, proved with key; "": as the environment says
}

// bindAnswer is the control line's answer: {ok, listen} or {error}.
type bindAnswer struct {
	OK     bool   `json:"ok,omitempty"`
	Listen string `json:"listen,omitempty"`
	Error  string `json:"error,omitempty"`
}

// parseBind reads one control line into the unit it binds, strictly: one
// JSON object of the line's keys alone, a home, a key of one line and 16
// bytes at least, a plain name, settings as config.json holds them. It
// reads no file: the home is looked at when the agent is made.
func parseBind(line []byte) (Unit, error) {
	var b bindLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Unit{}, fmt.Errorf("%w: the line is not one JSON object {agent, home, listen, key, settings, store}: %v", errBind, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Unit{}, fmt.Errorf("%w: more than one JSON object on the line", errBind)
	}
	if b.Home == "" {
		return Unit{}, fmt.Errorf("%w: no home", errBind)
	}
	if len(b.Key) < 16 || strings.ContainsAny(b.Key, "\n\r") {
		return Unit{}, fmt.Errorf("%w: want a key of one line, 16 bytes at least", errBind)
	}
	u := Unit{Name: b.Agent, Home: b.Home, Listen: b.Listen, key: b.Key, store: b.Store}
	if u.Listen == "" {
		u.Listen = "127.0.0.1:0"
	}
	if err := home.Plain(nameOf(u)); err != nil {
		return Unit{}, fmt.Errorf("%w: agent name %q: %v", errBind, nameOf(u), err)
	}
	if len(b.Settings) > 0 && string(b.Settings) != "null" {
		s, err := settings.Decode("the line's settings", b.Settings)
		if err != nil {
			return Unit{}, fmt.Errorf("%w: %v", errBind, err)
		}
		u.settings = &s
	}
	return u, nil
}

// readBind reads a control connection's one line, of MaxBindLine bytes at
// most; a connection closed after the line without its newline sends it
// too.
func readBind(c net.Conn) ([]byte, error) {
	c.SetReadDeadline(time.Now().Add(bindWait))
	line, err := bufio.NewReader(io.LimitReader(c, MaxBindLine+1)).ReadBytes('\n')
	line = bytes.TrimSuffix(line, []byte("\n"))
	switch {
	case len(line) > MaxBindLine:
		return nil, fmt.Errorf("%w: the line is over %d bytes", errBind, MaxBindLine)
	case err == io.EOF && len(line) > 0:
		return line, nil
	case err != nil:
		return nil, fmt.Errorf("%w: no line read: %v", errBind, err)
	}
	return line, nil
}

// binding is a control line read, for Run's loop to bind; answer is
// told the address or why not.
type binding struct {
	unit   Unit
	answer chan<- bindAnswer
}

// control answers the control connections of ln, one line each, until ln
// closes: a line that parses goes to binds, to be bound by Run's loop,
// whose answer it writes back; any other is refused here. Each connection
// is answered by its own goroutine, so a slow one holds no other up.
func control(ln net.Listener, binds chan<- binding, log *slog.Logger) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			a := bindAnswer{}
			line, err := readBind(c)
			if err == nil {
				var u Unit
				if u, err = parseBind(line); err == nil {
					answer := make(chan bindAnswer, 1)
					binds <- binding{unit: u, answer: answer}
					a = <-answer
				}
			}
			if err != nil {
				a = bindAnswer{Error: err.Error()}
			}
			if a.Error != "" {
				log.Warn("bind refused", "error", a.Error)
			}
			b, _ := json.Marshal(a)
			c.SetWriteDeadline(time.Now().Add(bindWait))
			c.Write(append(b, '\n'))
		}()
	}
}

// bind binds the blank unit to b's agent, once: it makes the agent and
// serves it, and answers with its address; an agent that cannot be made
// (no home, no model proxy, a home held by convert) leaves it blank and
// answers why. bound says whether it was bound before. It runs in Run's
// loop.
func (f *fleet) bind(b binding, bound bool) bool {
	if bound {
		b.answer <- bindAnswer{Error: "bind: this unit is bound already; a unit is bound once and never reused: bind another"}
		return true
	}
	js, err := f.prepare([]Unit{b.unit})
	if err != nil {
		b.answer <- bindAnswer{Error: fmt.Sprintf("%v: %v", errBind, err)}
		return false
	}
	addr := js[0].ln.Addr().String()
	if err := f.join(js); err != nil {
		b.answer <- bindAnswer{Error: fmt.Sprintf("%v: %v", errBind, err)}
		return false
	}
	f.Log.Info("bound", "agent", js[0].name, "listen", addr)
	b.answer <- bindAnswer{OK: true, Listen: addr}
	return true
}

// ErrControlInUse comes when a blank unit's control socket is another
// live unit's.
var ErrControlInUse = errors.New("the control socket is another unit's, which answers on it")

// ListenControl listens on the unix socket path, a blank unit's control
// socket. A socket left there by a
// unit that died without removing it (killed) is removed first; one that
// a live unit answers on is refused with ErrControlInUse, as is anything
// there that is not a socket.
func ListenControl(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	fi, serr := os.Lstat(path)
	if serr != nil || fi.Mode()&fs.ModeSocket == 0 {
		return nil, fmt.Errorf("%s is there and is not a socket: %w", path, err)
	}
	if c, derr := net.Dial("unix", path); derr == nil {
		c.Close()
		return nil, fmt.Errorf("%w: %s", ErrControlInUse, path)
	} else if !errors.Is(derr, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("%s: %w", path, derr)
	}
	if err := os.Remove(path); err != nil {
		return nil, err
	}
	return net.Listen("unix", path)
}
