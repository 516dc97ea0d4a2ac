package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/durable"
)

// ErrUnavailable comes when a tool did not start, initialize and list its
// calls: it did not answer, answered with an error, or took longer than
// Options.Start.
var ErrUnavailable = errors.New("tools: tool unavailable")

// Defaults of Options.
const (
	DefaultStart  = 30 * time.Second
	DefaultIdle   = 10 * time.Minute
	DefaultMaxAge = time.Hour
	DefaultCall   = 2 * time.Minute
)

// Options are a Set's limits; a zero field is its default.
type Options struct {
	Start  time.Duration // to start a session, initialize and list the calls
	Idle   time.Duration // a kept session unused this long is ended
	MaxAge time.Duration // a kept session this old is ended when next free
	Call   time.Duration // the longest one call may take, unless its server's Timeout says
	HTTP   *http.Client  // nil: a client of its own, without an overall timeout
	Log    *slog.Logger  // a tool that did not start; nil logs nothing
}

// Set is one agent's tools in one process: the servers the environment
// names, each one's list of calls, and the sessions kept between turns. It
// is safe for concurrent use by every conversation of the agent; use New.
type Set struct {
	agent     home.Agent
	agentMeta any // the agent's name, as each call's _meta holds it
	servers   []Server
	byName    map[string]Server
	o         Options

	writeMu sync.Mutex // serializes writes of tool-lists.json

	mu     sync.Mutex
	loaded bool             // tool-lists.json was read
	lists  map[string]*List // by tool name: the calls each lists, as last known
	file   []byte           // tool-lists.json as last read or written
	dirty  bool             // the lists may differ from file: writeLists has work
	err    error            // a write of tool-lists.json that failed, said at the next Begin
	kept   map[string]*slot // kept sessions by tool name
	closed bool
}

// slot is a kept session, or one being opened: ready is closed once s or
// err is set.
type slot struct {
	ready chan struct{}
	s     *session
	err   error
}

// New returns the tools of agent, served by servers (FromEnviron).
func New(agent home.Agent, servers []Server, o Options) *Set {
	if o.Start <= 0 {
		o.Start = DefaultStart
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Call <= 0 {
		o.Call = DefaultCall
	}
	o.HTTP = limited(o.HTTP)
	s := &Set{agent: agent, agentMeta: agent.Name, o: o, byName: map[string]Server{}, kept: map[string]*slot{}}
	for _, sv := range servers {
		if _, dup := s.byName[sv.Name]; !dup {
			s.servers = append(s.servers, sv)
			s.byName[sv.Name] = sv
		}
	}
	return s
}

// Servers returns the tool servers, in order of name.
func (s *Set) Servers() []Server { return append([]Server(nil), s.servers...) }

// Close ends every kept session.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	var end []*session
	for name, sl := range s.kept {
		select {
		case <-sl.ready:
			if sl.s != nil {
				end = append(end, sl.s)
			}
		default: // being opened: the opener finds the Set closed
		}
		delete(s.kept, name)
	}
	s.mu.Unlock()
	for _, ss := range end {
		ss.stopTimer()
		ss.close()
	}
}

// load reads tool-lists.json once a process, keeping the lists whose
// address is the tool's address now. Bytes that are not the file's format
// are a file to make again, since it is derived.
func (s *Set) load() error {
	if s.loaded {
		return nil
	}
	path, err := s.agent.Path(home.ToolLists, "")
	if err != nil {
		return err
	}
	lists, b, err := readLists(path)
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if !errors.As(err, &se) && !errors.As(err, &te) {
			return err
		}
		lists, b = map[string]*List{}, nil
	}
	s.lists = map[string]*List{}
	for name, l := range lists {
		if sv, ok := s.byName[name]; ok && l.Address == AddressHash(sv.URL) {
			s.lists[name] = l
		}
	}
	s.file = b
	s.loaded = true
	s.dirty = true // the file may hold tools the agent no longer has
	return nil
}

// noteList keeps a list a session just gave, and writes tool-lists.json
// when its bytes change.
func (s *Set) noteList(l *List) {
	s.mu.Lock()
	if old := s.lists[l.Name]; old != nil && sameList(old, l) {
		s.mu.Unlock()
		return
	}
	s.lists[l.Name] = l
	s.dirty = true
	s.mu.Unlock()
	s.writeLists()
}

func sameList(a, b *List) bool {
	if a.Name != b.Name || a.Address != b.Address || a.Instructions != b.Instructions || len(a.Calls) != len(b.Calls) {
		return false
	}
	for i := range a.Calls {
		x, y := &a.Calls[i], &b.Calls[i]
		if x.Name != y.Name || x.Description != y.Description || !bytes.Equal(x.Schema, y.Schema) {
			return false
		}
	}
	return true
}

// writeLists writes tool-lists.json if what it should hold differs from
// what it holds. With no list changed since it last ran, it does nothing:
// the lists are not even encoded, so a turn pays nothing for them.
func (s *Set) writeLists() {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return
	}
	s.dirty = false
	b := encodeLists(s.servers, s.lists)
	same := bytes.Equal(b, s.file)
	s.mu.Unlock()
	if same {
		return
	}
	path, err := s.agent.Path(home.ToolLists, "")
	if err == nil {
		err = durable.ReplaceFile(path, b, 0o600) // derived: listed again when lost
	}
	s.mu.Lock()
	if err != nil {
		s.err = fmt.Errorf("tools: writing tool-lists.json: %w", err)
		s.dirty = true // try again at the next turn
	} else {
		s.file = b
	}
	s.mu.Unlock()
}

// Begin starts a turn's use of the tools. The first turn of a process
// reads tool-lists.json; a tool with no list yet is listed now, all such at
// once, each within Options.Start: a kept tool's session is kept, another's
// ends with the turn. A tool that is not listed and does not answer is left
// out of this turn only. only, when not nil, narrows what is offered.
func (s *Set) Begin(ctx context.Context, only *Only) (*Turn, error) {
	s.mu.Lock()
	if err := s.load(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	werr := s.err
	s.err = nil
	var unlisted []Server
	for _, sv := range s.servers {
		if s.lists[sv.Name] == nil && (only == nil || only.mayOffer(sv.Name)) {
			unlisted = append(unlisted, sv)
		}
	}
	s.mu.Unlock()

	t := &Turn{set: s, sessions: map[string]*slot{}}
	var wg sync.WaitGroup
	for _, sv := range unlisted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if Kept(sv.Name) {
				if ss, err := s.acquire(ctx, sv); err == nil {
					s.release(ss)
				}
				return
			}
			t.open(ctx, sv)
		}()
	}
	wg.Wait()
	s.writeLists()

	s.mu.Lock()
	t.offer(s.servers, s.lists, only)
	s.mu.Unlock()
	return t, werr
}

// Expand names each whole tool among entries whose calls are known by its
// calls (memory becomes memory__list, memory__read …), so a later list can
// narrow within it; other entries stay as they are. A nil Set expands
// nothing.
func (s *Set) Expand(entries []string) []string {
	entries = clean(entries)
	if s == nil {
		return entries
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.load() != nil {
		return entries
	}
	var out []string
	for _, e := range entries {
		l := s.lists[e]
		if l == nil {
			out = append(out, e)
			continue
		}
		for _, c := range l.Calls {
			out = append(out, e+"__"+modelName(c.Name))
		}
	}
	return clean(out)
}

// acquire returns the kept session of sv, opening one if there is none
// usable, and counts the caller in until release.
func (s *Set) acquire(ctx context.Context, sv Server) (*session, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %s: the agent's tools were closed", ErrUnavailable, sv.Name)
		}
		sl := s.kept[sv.Name]
		if sl != nil {
			select {
			case <-sl.ready:
			default:
				s.mu.Unlock()
				select {
				case <-sl.ready:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				s.mu.Lock()
				if s.kept[sv.Name] == sl && sl.err != nil {
					delete(s.kept, sv.Name)
				}
				err := sl.err
				s.mu.Unlock()
				if err != nil {
					return nil, err
				}
				continue
			}
			if ss := sl.s; ss != nil && s.usable(ss, time.Now()) {
				ss.inflight++
				ss.stopTimer()
				s.mu.Unlock()
				return ss, nil
			}
			s.retire(sv.Name, sl)
		}
		sl = &slot{ready: make(chan struct{})}
		s.kept[sv.Name] = sl
		s.mu.Unlock()

		ss, err := s.openSession(ctx, sv)
		s.mu.Lock()
		sl.s, sl.err = ss, err
		if err != nil {
			if s.kept[sv.Name] == sl {
				delete(s.kept, sv.Name)
			}
		} else if s.closed || s.kept[sv.Name] != sl {
			ss.retired = true
		}
		if ss != nil {
			ss.inflight++
		}
		close(sl.ready)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		s.noteList(ss.list)
		return ss, nil
	}
}

// openSession opens a session with sv within Options.Start; one that does
// not start is logged, once per try, as the tool left out.
func (s *Set) openSession(ctx context.Context, sv Server) (*session, error) {
	ss, err := openSession(ctx, sv, s.o.HTTP, s.o.Start, time.Now())
	if err != nil && s.o.Log != nil {
		s.o.Log.Warn("tool unavailable", "agent", s.agent.Name, "tool", sv.Name, "error", err)
	}
	return ss, err
}

// usable tells whether a kept session may take another call. s.mu is held.
func (s *Set) usable(ss *session, now time.Time) bool {
	return !ss.retired && now.Sub(ss.lastUsed) < s.o.Idle && now.Sub(ss.started) < s.o.MaxAge
}

// retire takes a kept session out of use: ended now if no call is in it,
// else when its last call ends. s.mu is held.
func (s *Set) retire(name string, sl *slot) {
	if s.kept[name] == sl {
		delete(s.kept, name)
	}
	if ss := sl.s; ss != nil && !ss.retired {
		ss.retired = true
		ss.stopTimer()
		if ss.inflight == 0 {
			go ss.close()
		}
	}
}

// release counts a caller of a kept session out, and sets it to end when
// unused for Idle or MaxAge after it started, whichever comes first.
func (s *Set) release(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.inflight--
	now := time.Now()
	ss.lastUsed = now
	if ss.inflight > 0 {
		return
	}
	if ss.retired {
		go ss.close()
		return
	}
	wait := min(s.o.Idle, ss.started.Add(s.o.MaxAge).Sub(now))
	ss.timer = time.AfterFunc(max(wait, 0), func() { s.expire(ss) })
}

// expire ends a kept session whose time is up, if no call is in it.
func (s *Set) expire(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss.inflight > 0 || ss.retired {
		return
	}
	sl := s.kept[ss.server.Name]
	if sl == nil || sl.s != ss {
		return
	}
	if s.usable(ss, time.Now()) {
		wait := min(s.o.Idle-time.Since(ss.lastUsed), time.Until(ss.started.Add(s.o.MaxAge)))
		ss.timer = time.AfterFunc(max(wait, 0), func() { s.expire(ss) })
		return
	}
	s.retire(ss.server.Name, sl)
}

// stopTimer stops the session's end being set. The Set's mu is held.
func (ss *session) stopTimer() {
	if ss.timer != nil {
		ss.timer.Stop()
		ss.timer = nil
	}
}

// KeptSessions is how many kept sessions are open or opening, for tests and
// metrics.
func (s *Set) KeptSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.kept)
}
