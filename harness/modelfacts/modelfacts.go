package modelfacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/event"
)

// DescribeTimeout bounds asking a runtime about a model.
const DescribeTimeout = 5 * time.Second

// Turn is what one turn knows of its model. Its fields are where it
// learns it, set before its first use; the facts are read at the first.
type Turn struct {
	Getenv   func(string) string // LNK_HOME (the user's file), and the model proxy's variables
	HTTP     *http.Client        // for asking a runtime
	Facts    *facts.Cache        // the user's facts as last read: the process's, or the Runner's
	Runtimes *facts.Runtimes     // what runtimes said of their models: the Runner's

	book *facts.Book // as the turn first read it
}

// Book is the model facts, Link's with the user's file over them, read at
// the turn's first use and the same after.
func (t *Turn) Book() (*facts.Book, error) {
	if t.book != nil {
		return t.book, nil
	}
	path, err := facts.UserPath(t.Getenv)
	if err != nil {
		return nil, err
	}
	book, err := t.Facts.Load(path)
	if err != nil {
		return nil, err
	}
	t.book = book
	return book, nil
}

// Model is what is known of s's model: the facts, and, for a model on a
// runtime, what the runtime says it runs the model with. A runtime that
// does not answer says nothing.
func (t *Turn) Model(ctx context.Context, s *settings.Settings) (facts.Model, error) {
	book, err := t.Book()
	if err != nil {
		return facts.Model{}, err
	}
	m := book.Model(s.Model.Name)
	provider := s.Model.Provider
	if provider == "" {
		provider = m.Provider.Value
	}
	if rt, ok := t.runtime(ctx, provider, s.Model.Name); ok {
		m.SetRuntime(rt.Trained, rt.Runs)
	}
	return m, nil
}

// Window is the window's size in tokens and the answer's room for s's
// model, in the seed's order (see facts.Window and facts.AnswerRoom). It
// also settles the model's provider when the spec names none: its facts',
// else the name's maker.
func (t *Turn) Window(ctx context.Context, s *settings.Settings) (size, room int, err error) {
	m, err := t.Model(ctx, s)
	if err != nil {
		return 0, 0, err
	}
	if s.Model.Provider == "" {
		s.Model.Provider = m.Provider.Value
	}
	size, _ = facts.Window(&m, s.Window)
	return size, facts.AnswerRoom(&m, s, size), nil
}

// Refusal is err, or, for a prompt refused as too long (model.ErrTooLong,
// in the provider's words), the error that says the window it was sized
// for (size; 0 when not known), where that came from, and where to change
// it.
func (t *Turn) Refusal(ctx context.Context, err error, s *settings.Settings, size int) error {
	if !errors.Is(err, model.ErrTooLong) {
		return err
	}
	from := facts.Source("")
	if m, ferr := t.Model(ctx, s); ferr == nil {
		var sz int
		sz, from = facts.Window(&m, s.Window)
		if size == 0 {
			size = sz
		}
	}
	where := "the model facts file"
	if p, perr := facts.UserPath(t.Getenv); perr == nil {
		where = p
	}
	return fmt.Errorf("%w: the prompt was sized for a window of %d tokens (%s); to change it, set [window] max in the agent's spec, or window under [models.%q] in %s",
		err, size, from, s.Model.Name, where)
}

// Cost is what model calls that used u cost in USD, and where that figure
// comes from: what the provider said it charged (c), where it said so, 0
// too; else u at the prices known of s's model. A cost priced at no known
// price has no source, and the event says nothing of it.
func (t *Turn) Cost(s *settings.Settings, u event.Usage, c model.Cost) (float64, string) {
	if c.Reported {
		return c.USD, event.CostReported
	}
	book, err := t.Book()
	if err != nil {
		return 0, ""
	}
	m := book.Model(s.Model.Name)
	if usd := facts.Cost(&m, u); usd != 0 {
		return usd, event.CostPriced
	}
	return 0, ""
}

// runtime asks provider, when it is a runtime on the machine, what it runs
// the model named name with.
func (t *Turn) runtime(ctx context.Context, provider, name string) (model.Runtime, bool) {
	c, err := model.New(provider, t.Getenv, t.HTTP)
	if err != nil {
		return model.Runtime{}, false
	}
	d, ok := c.(model.Describer)
	if !ok {
		return model.Runtime{}, false
	}
	own := model.OwnName(provider, name)
	key := strings.Join([]string{provider, t.Getenv("LNK_MODEL_PROXY_" + strings.ToUpper(provider)), t.Getenv("LNK_MODEL_PROXY"), own}, "\x00")
	now := time.Now()
	if trained, runs, ok := t.Runtimes.Said(key, now); ok {
		return model.Runtime{Trained: trained, Runs: runs}, true
	}
	ctx, cancel := context.WithTimeout(ctx, DescribeTimeout)
	defer cancel()
	rt, err := d.Describe(ctx, own)
	if err != nil {
		return model.Runtime{}, false
	}
	t.Runtimes.Keep(key, rt.Trained, rt.Runs, now)
	return rt, true
}

// Fallback is the settings and the request of s's fallback model, in
// place of req: its own provider (its facts', else its maker), name,
// window and answer's room, the rest of the prompt the same; system, when
// not nil, says the system prompt (and its stable part) for the model
// named.
func (f *Turn) Fallback(ctx context.Context, s *settings.Settings, req *model.Request, system func(name string) (string, int)) (settings.Settings, *model.Request, error) {
	fs := *s
	fs.Model.Name, fs.Model.Provider, fs.Model.Fallback = s.Model.Fallback, "", ""
	size, room, err := f.Window(ctx, &fs)
	if err != nil {
		return fs, nil, err
	}
	freq := *req
	freq.Model = model.OwnName(fs.Provider(), fs.Model.Name)
	if system != nil {
		freq.System, freq.SystemStable = system(fs.Model.Name)
	}
	freq.Window, freq.MaxTokens = size, room
	return fs, &freq, nil
}
