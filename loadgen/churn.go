package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
)

// Churn is what joining and leaving did to the load (Config.Churn): the
// messages of the agents that stayed, of those that left and of those that
// joined, apart.
type Churn struct {
	Left   int `json:"left"`   // agents
	Joined int `json:"joined"` // agents
	// At is how many messages were answered when the SIGHUP was sent;
	// Seconds, from then until every joining agent listened.
	At      int     `json:"at"`
	Seconds float64 `json:"seconds"`

	Stayed  Outcome `json:"stayed"`
	Leaving Outcome `json:"leaving"`
	Joining Outcome `json:"joining"`
}

// Outcome counts one group's messages. Refused are messages to an agent
// that had left, refused before the harness read them (the connection
// refused or reset, or closed before any answer) and, checked, in none of
// its logs; Errors are every other message not answered, and each message
// written to a log without its answer after it.
type Outcome struct {
	Sent       int    `json:"sent"`
	Answered   int    `json:"answered"`
	Refused    int    `json:"refused"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
}

func (o *Outcome) fail(err error) {
	o.Errors++
	if o.FirstError == "" {
		o.FirstError = err.Error()
	}
}

// Groups of agents under churn.
const (
	stayed = iota
	leaving
	joining
)

// churn is one run's joining and leaving: once half the messages are
// answered, the last Churn agents leave and as many new ones join, by one
// SIGHUP; a joining agent takes over the conversations its leaving one
// had not begun.
type churn struct {
	unit   drive.Churner
	after  []drive.Agent     // the agents served once it is done
	swap   map[string]string // a leaving agent's name: the joining one's
	group  map[string]int
	homes  map[string]string // each leaving agent's home, for the check
	half   int
	once   sync.Once
	begun  chan struct{} // closed as the SIGHUP goes
	done   chan struct{} // closed once every joining agent listens, or it failed
	err    error         // set before done is closed
	at     int
	second float64
}

// newChurn plans the churn of k agents of served, all of which are
// served first; extra are the k that join.
func newChurn(unit drive.Unit, served, extra []drive.Agent, total int) (*churn, error) {
	u, ok := unit.(drive.Churner)
	if !ok {
		return nil, fmt.Errorf("%w: the harness's agents cannot join and leave", ErrConfig)
	}
	k := len(extra)
	c := &churn{
		unit: u, swap: map[string]string{}, group: map[string]int{}, homes: map[string]string{},
		half: total / 2, begun: make(chan struct{}), done: make(chan struct{}),
	}
	stay := served[:len(served)-k] // the first agent stays: it serves /metrics
	c.after = append(append([]drive.Agent(nil), stay...), extra...)
	for i, a := range served[len(served)-k:] {
		c.swap[a.Name] = extra[i].Name
		c.group[a.Name] = leaving
		c.homes[a.Name] = a.Home
		c.group[extra[i].Name] = joining
	}
	return c, nil
}

// answered is told each message answered, the count so far; at half the
// run it starts the churn.
func (c *churn) answered(ctx context.Context, n int, say func(string, ...any)) {
	if n < c.half {
		return
	}
	c.once.Do(func() {
		c.at = n
		go func() {
			defer close(c.done)
			say("%d messages answered: %d agents leave and %d join (SIGHUP)", n, len(c.swap), len(c.swap))
			close(c.begun)
			start := time.Now()
			c.err = c.unit.Churn(ctx, c.after)
			c.second = time.Since(start).Seconds()
		}()
	})
}

// hasBegun tells whether the SIGHUP has gone.
func (c *churn) hasBegun() bool {
	select {
	case <-c.begun:
		return true
	default:
		return false
	}
}

// agentFor is the agent a conversation not yet begun goes to: a leaving
// agent's goes to its joining one once the churn has begun (waiting for it
// to listen). It returns "" when the joining agent could not join.
func (c *churn) agentFor(ctx context.Context, name string) string {
	to, ok := c.swap[name]
	if !ok {
		return name
	}
	if !c.hasBegun() {
		return name
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return ""
	}
	if c.err != nil {
		return ""
	}
	return to
}

// refusal tells an error that says the message never reached the harness
// or was not read: the connection refused or reset, or closed before an
// answer began.
func refusal(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// result counts msgs by group and checks the leaving agents' logs: a
// refused message must be in none, and no message there may lack its
// answer after it.
func (c *churn) result(msgs []message) (*Churn, error) {
	r := &Churn{Left: len(c.swap), Joined: len(c.swap), At: c.at, Seconds: c.second}
	refused := map[string]map[string]bool{} // leaving agent: ids refused
	for _, m := range msgs {
		o := &r.Stayed
		switch c.group[m.agent] {
		case leaving:
			o = &r.Leaving
		case joining:
			o = &r.Joining
		}
		o.Sent++
		switch {
		case m.err == nil:
			o.Answered++
		case m.left && refusal(m.err):
			o.Refused++
			if refused[m.agent] == nil {
				refused[m.agent] = map[string]bool{}
			}
			refused[m.agent][m.id] = true
		default:
			o.fail(m.err)
		}
	}
	for name, home := range c.homes {
		if err := checkLeft(home, refused[name], &r.Leaving); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// checkLeft reads every conversation of a leaving agent's home: no id of
// refused may be there, and every message must have an answer after it.
func checkLeft(home string, refused map[string]bool, o *Outcome) error {
	chats := filepath.Join(home, "chats")
	dirs, err := os.ReadDir(chats)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loadgen: churn: %w", err)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(chats, d.Name(), "events.jsonl"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("loadgen: churn: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 8<<20)
		last := ""
		for sc.Scan() {
			var e struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			}
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				return fmt.Errorf("loadgen: churn: %s: %w", d.Name(), err)
			}
			if e.Type == "message" && refused[e.ID] {
				o.Refused--
				o.fail(fmt.Errorf("loadgen: churn: message %s to a leaving agent was refused, yet it is in %s's log", e.ID, d.Name()))
			}
			if e.Type == "message" || e.Type == "answer" {
				last = e.Type
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("loadgen: churn: %s: %w", d.Name(), err)
		}
		if last == "message" {
			o.fail(fmt.Errorf("loadgen: churn: %s of a leaving agent ends with a message never answered", d.Name()))
		}
	}
	return nil
}
