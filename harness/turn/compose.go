package turn

import (
	"cmp"
	"context"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/instructions"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/modelfacts"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/window"
	"lnk.dev/linkharness/store/event"
)

// composing is what the turn read for its prompt.
type composing struct {
	home        instructions.Reader // what it read of the agent's home (see reader)
	startConn   string              // the connection of the conversation's first message, as open read it
	cacheThread string              // the thread whose cache key the conversation's requests carry: a fork's origin; "" is its own
	sections    []prompt.Section    // the prompt's sections as this turn read them, for a fallback model
	msg         *Message            // the turn's message, and
	set         *settings.Settings  // its settings, for composing the instructions again
	facts       modelfacts.Turn     // what it knows of its model (see facts)
	prep        opened              // prepare's: the request, and the window it read
}

// The turn reads what the agent's home says, its settings and its
// instructions, through package instructions, which keeps what it read in
// the Runner's cache until the files change.

// facts is what the turn knows of its model, read at its first use with
// the process's model facts, else the Runner's.
func (t *turn) facts() *modelfacts.Turn {
	if t.comp.facts.Getenv == nil {
		cache := t.r.Facts
		if cache == nil {
			cache = &t.c.facts
		}
		t.comp.facts = modelfacts.Turn{Getenv: t.r.getenv, HTTP: t.r.HTTP, Facts: cache, Runtimes: &t.c.runtimes}
	}
	return &t.comp.facts
}

// reader is the turn's reader of its agent's home, made at its first use.
func (t *turn) reader() *instructions.Reader {
	if t.comp.home.Cache == nil {
		t.comp.home = instructions.Reader{Cache: &t.c.prompts, Agent: t.r.Agent, Log: t, Read: &t.read}
	}
	return &t.comp.home
}

// settings are the agent's settings: those the Runner holds, else
// config.json's.
func (t *turn) settings() (*settings.Settings, error) {
	if t.r.Settings != nil {
		s := *t.r.Settings
		return &s, nil
	}
	path, err := t.r.Agent.Path(home.Config, "")
	if err != nil {
		return nil, err
	}
	s, err := t.reader().Settings(path)
	return &s, err
}

// sections reads the prompt's sections for message m.
func (t *turn) sections(s *settings.Settings, m *Message) []prompt.Section {
	return t.reader().Sections(s, t.tools.words, t.startConnection(m))
}

// composeFor is the system prompt for m, and its stable part's length; its
// sections are kept for a fallback model's prompt when s names one.
func (t *turn) composeFor(s *settings.Settings, m *Message) (string, int) {
	sections := t.sections(s, m)
	if s.Model.Fallback != "" {
		t.comp.sections = sections
	}
	return t.compose(sections)
}

// compose is the system prompt of sections, and its stable part's length.
func (t *turn) compose(sections []prompt.Section) (string, int) {
	return t.reader().Compose(sections)
}

// systemFor is the system prompt for the model named: this turn's
// sections with that model's own instructions in the model section's
// place. The models work calls it for a fallback model.
func (t *turn) systemFor(s *settings.Settings, sections []prompt.Section, modelName string) (string, int) {
	return t.reader().SystemFor(s, sections, modelName)
}

// startConnection is the connection the conversation started on: that of
// its first message, this one when it is the first.
func (t *turn) startConnection(m *Message) string {
	if t.last == 1 && m != nil {
		return m.Connection
	}
	return t.comp.startConn
}

// LeftOut says in the log what the prompt left out, and why.
func (t *turn) LeftOut(section, file, why string) {
	t.log().Warn("instruction left out", "section", section, "file", file, "why", why)
}

// opened is the request, window and share a turn made before the rounds.
type opened struct {
	req    *model.Request
	events []event.Event
	cp     window.Checkpoint
	share  int
}

// prepare readies the turn's tools, and reads its prompt and window into w.
func (t *turn) prepare(ctx context.Context, s *settings.Settings, m *Message, w *opened) error {
	t.watchEnd()
	if err := t.beginTools(ctx, m); err != nil {
		return err
	}
	t.comp.msg, t.comp.set = m, s
	system, stable := t.composeFor(s, m)
	size, room, err := t.facts().Window(ctx, s)
	if err != nil {
		return err
	}
	var offered []model.Tool
	if t.tools.offer != nil {
		offered = t.tools.offer.Tools()
	}
	*w = opened{share: window.Share(size, room, window.Tokens(system)+prompt.ToolsTokens(offered), s.Window.Margin)}
	t.sum.share = w.share
	w.events, w.cp, err = t.readWindow(ctx, w.share)
	if err != nil {
		return err
	}
	w.req = &model.Request{
		Model:     model.OwnName(s.Provider(), s.Model.Name),
		System:    system,
		MaxTokens: room,
		Window:    size,

		SystemStable: stable,
		CacheKey:     prompt.CacheKey(t.r.Agent.Name, cmp.Or(t.comp.cacheThread, t.thread)),
	}
	return nil
}
