package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"lnk.dev/linkharness/harness/model"
)

// Turn is what one turn offers the model and the sessions it opened of
// tools whose sessions are not kept. Call may be used by many goroutines at
// once; End once every call has returned.
type Turn struct {
	set *Set

	// set by Begin, then only read
	tools  []model.Tool
	instr  []Instruction
	byName map[string]offered

	mu       sync.Mutex
	sessions map[string]*slot // this turn's sessions, by tool name
}

// offered is what a name the model sees stands for.
type offered struct {
	server Server
	call   string // the tool's own name for it
}

// Instruction is a tool's initialize instructions, for the prompt's tools
// section.
type Instruction struct {
	Tool string // the tool's name: memory, everything
	Text string // at most MaxInstructionBytes
}

// Tools returns the tools offered this turn: each server's calls named
// <tool>__<call>, servers and calls in order of name, the same bytes every
// turn the lists are the same. The slice is the Turn's; do not change it.
func (t *Turn) Tools() []model.Tool { return t.tools }

// Instructions returns, in order of tool name, the initialize instructions
// of each tool offered this turn that gave some. The slice is the Turn's.
func (t *Turn) Instructions() []Instruction { return t.instr }

// Offered tells whether the conversation was offered name this turn.
func (t *Turn) Offered(name string) bool {
	_, ok := t.byName[name]
	return ok
}

// maxNameBytes is the longest tool name every provider takes.
const maxNameBytes = 64

// offer sets what the turn offers, from the lists known. The Set's mu is held.
func (t *Turn) offer(servers []Server, lists map[string]*List, only *Only) {
	t.byName = map[string]offered{}
	for _, sv := range servers {
		l := lists[sv.Name]
		if l == nil {
			continue
		}
		n := 0
		for i := range l.Calls {
			c := &l.Calls[i]
			name := sv.Name + "__" + modelName(c.Name)
			if len(name) > maxNameBytes || (only != nil && !only.offers(name)) {
				continue
			}
			if _, dup := t.byName[name]; dup {
				continue
			}
			t.byName[name] = offered{server: sv, call: c.Name}
			t.tools = append(t.tools, model.Tool{Name: name, Description: c.Description, Schema: c.Schema})
			n++
		}
		if n > 0 && l.Instructions != "" {
			t.instr = append(t.instr, Instruction{Tool: sv.Name, Text: l.Instructions})
		}
	}
}

// modelName is a call's name as the providers take it: each character
// outside [A-Za-z0-9_-] becomes '_'.
func modelName(call string) string {
	b := []byte(call)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Call makes the call the model named name with args (a JSON object) in
// the conversation thread, on the tool's kept session or on this turn's,
// opening it if need be. The request's _meta says the thread and the agent
// (MetaThread, MetaAgent), since a kept session serves every conversation
// of the agent. Every outcome is a Result, since each call is answered: a
// name not offered is one there isn't, a tool that does not start is
// unavailable.
func (t *Turn) Call(ctx context.Context, thread, name string, args []byte) Result {
	o, ok := t.byName[name]
	if !ok {
		return Result{Error: fmt.Sprintf("There is no tool named %s in this conversation.", name)}
	}
	limit := o.server.Timeout
	if limit <= 0 {
		limit = t.set.o.Call
	}
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errTookTooLong)
	defer cancel()
	ctx, tooLarge := withTripped(ctx)
	meta := callMeta(t.set.agentMeta, thread)
	for try := 0; ; try++ {
		ss, fresh, done, err := t.session(ctx, o.server)
		if err != nil {
			return Result{Error: fmt.Sprintf("The tool %s is unavailable: %v", o.server.Name, errText(err))}
		}
		res, err := ss.call(ctx, o.call, args, meta)
		if err != nil && ended(err) && !fresh && try == 0 {
			done(true) // the server ended the session: the call never reached the tool
			continue
		}
		done(false)
		if err != nil {
			if context.Cause(ctx) == errTookTooLong {
				return Result{Error: fmt.Sprintf("The tool did not answer in %v: the call to %s was given up.", limit, name)}
			}
			if tooLarge.Load() || errors.Is(err, ErrAnswerTooLarge) {
				return Result{Error: fmt.Sprintf("The tool's answer was over %d MiB, and was not read: the call to %s was given up.", MaxAnswerBytes>>20, name)}
			}
			return Result{Error: fmt.Sprintf("The call to %s failed: %v", name, errText(err))}
		}
		return resultOf(res)
	}
}

// errTookTooLong ends a call past its limit.
var errTookTooLong = errors.New("tools: the call took too long")

// errText is an error without the package's prefix, for the model.
func errText(err error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "tools: tool unavailable: "), "tools: ")
}

// session returns the session a call of sv goes on: the kept one, or this
// turn's. done lets go of it; done(true) says the server ended it.
func (t *Turn) session(ctx context.Context, sv Server) (ss *session, fresh bool, done func(ended bool), err error) {
	if Kept(sv.Name) {
		before := time.Now()
		ss, err := t.set.acquire(ctx, sv)
		if err != nil {
			return nil, false, nil, err
		}
		return ss, !ss.started.Before(before), func(ended bool) {
			if ended {
				t.set.mu.Lock()
				if sl := t.set.kept[sv.Name]; sl != nil && sl.s == ss {
					t.set.retire(sv.Name, sl)
				}
				t.set.mu.Unlock()
			}
			t.set.release(ss)
		}, nil
	}
	ss, fresh, err = t.open(ctx, sv)
	if err != nil {
		return nil, false, nil, err
	}
	return ss, fresh, func(ended bool) {
		if ended {
			t.mu.Lock()
			if sl := t.sessions[sv.Name]; sl != nil && sl.s == ss {
				delete(t.sessions, sv.Name)
			}
			t.mu.Unlock()
			ss.close()
		}
	}, nil
}

// open returns this turn's session with sv, opening it once however many
// calls ask at once.
func (t *Turn) open(ctx context.Context, sv Server) (*session, bool, error) {
	t.mu.Lock()
	if sl := t.sessions[sv.Name]; sl != nil {
		t.mu.Unlock()
		select {
		case <-sl.ready:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		return sl.s, false, sl.err
	}
	sl := &slot{ready: make(chan struct{})}
	t.sessions[sv.Name] = sl
	t.mu.Unlock()
	sl.s, sl.err = t.set.openSession(ctx, sv)
	if sl.err == nil {
		t.set.noteList(sl.s.list)
	}
	close(sl.ready)
	return sl.s, true, sl.err
}

// End ends the sessions this turn opened; kept sessions stay.
func (t *Turn) End() {
	if t == nil {
		return
	}
	t.mu.Lock()
	sessions := t.sessions
	t.sessions = map[string]*slot{}
	t.mu.Unlock()
	for _, sl := range sessions {
		<-sl.ready
		if sl.s != nil {
			sl.s.close()
		}
	}
}
