package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/trace"
	"lnk.dev/linkharness/store/event"
)

// callModel asks the model through the proxy. When the provider says the
// model is unavailable (overloaded) before it has handed on a word, the
// spec's fallback model is asked in its place, with the rest of the prompt
// the same; when the fallback answers, s and req are changed to name it, so
// the rest of the turn (its answer event, its next rounds) is the
// fallback's. A refusal of the prompt as too long is reported as that: the
// window it was sized for, and where to change it.
func (t *turn) callModel(ctx context.Context, s *settings.Settings, req *model.Request, onText func(string)) (*model.Response, error) {
	if req.Stall == 0 {
		req.Stall = t.r.stall()
	}
	req.Timeout = time.Duration(s.Model.Timeout) // 0: the model package's default
	started := false
	relay := func(frag string) {
		started = true
		if onText != nil {
			onText(frag)
		}
	}
	resp, err := t.ask(ctx, s.Provider(), req, relay)
	if err != nil && ctx.Err() == nil && !started && s.Model.Fallback != "" && errors.Is(err, model.ErrUnavailable) {
		first := err
		t.log().Warn("model fallback", "model", s.Model.Name, "fallback", s.Model.Fallback, "error", first)
		fs, freq, ferr := t.fallback(ctx, s, req)
		if ferr != nil {
			return nil, fmt.Errorf("%w; the fallback %s: %v", first, s.Model.Fallback, ferr)
		}
		resp, err = t.ask(ctx, fs.Provider(), freq, relay)
		if err != nil {
			err = fmt.Errorf("%s was unavailable (%v), and the fallback %s failed: %w", s.Model.Name, first, fs.Model.Name, err)
			s, req = &fs, freq // the refusal below is the fallback's
		} else {
			*s, *req = fs, *freq
		}
	}
	if err != nil && errors.Is(err, model.ErrTooLong) {
		return nil, t.refusal(ctx, err, s, req)
	}
	return resp, err
}

// ask calls provider's model once, timing the call.
func (t *turn) ask(ctx context.Context, provider string, req *model.Request, onText func(string)) (*model.Response, error) {
	c, err := model.New(provider, t.r.getenv, t.r.HTTP)
	if err != nil {
		return nil, err
	}
	start := t.r.now()
	sp := t.chatSpan(provider, req.Model)
	resp, err := c.Call(ctx, req, onText)
	t.r.Metrics.Provider(provider).Call(t.r.now().Sub(start), err)
	if resp != nil {
		sp.End(trace.Answer{Model: resp.Model, Usage: resp.Usage, Finish: resp.StopReason}, err)
	} else {
		sp.End(trace.Answer{}, err)
	}
	return resp, err
}

// fallback returns the settings and the request of s's fallback model: its
// own provider (its facts', else its maker), name, window and answer's
// room; the rest of the prompt the same.
func (t *turn) fallback(ctx context.Context, s *settings.Settings, req *model.Request) (settings.Settings, *model.Request, error) {
	fs := *s
	fs.Model.Name, fs.Model.Provider, fs.Model.Fallback = s.Model.Fallback, "", ""
	size, room, err := t.windowSize(ctx, &fs)
	if err != nil {
		return fs, nil, err
	}
	freq := *req
	freq.Model = model.OwnName(fs.Provider(), fs.Model.Name)
	if t.comp.sections != nil {
		// The fallback's own instructions in the first's place, the rest of
		// the prompt the same.
		freq.System, freq.SystemStable = t.systemFor(s, t.comp.sections, fs.Model.Name)
	}
	freq.Window, freq.MaxTokens = size, room
	return fs, &freq, nil
}

// refusal is the error of a prompt refused as too long: the provider's
// words, the window the prompt was sized for and where it came from, and
// where to change it.
func (t *turn) refusal(ctx context.Context, err error, s *settings.Settings, req *model.Request) error {
	size, from := req.Window, facts.Source("")
	if m, _, ferr := t.modelFacts(ctx, s); ferr == nil {
		var sz int
		sz, from = facts.Window(&m, s.Window)
		if size == 0 {
			size = sz
		}
	}
	where := "the model facts file"
	if p, perr := facts.UserPath(t.r.getenv); perr == nil {
		where = p
	}
	return fmt.Errorf("%w: the prompt was sized for a window of %d tokens (%s); to change it, set [window] max in the agent's spec, or window under [models.%q] in %s",
		err, size, from, s.Model.Name, where)
}

// windowSize is the window's size in tokens and the answer's room for s's
// model, in the seed's order (see facts.Window and facts.AnswerRoom). It
// also settles the model's provider when the spec names none: its facts',
// else the name's maker.
func (t *turn) windowSize(ctx context.Context, s *settings.Settings) (size, room int, err error) {
	m, _, err := t.modelFacts(ctx, s)
	if err != nil {
		return 0, 0, err
	}
	if s.Model.Provider == "" {
		s.Model.Provider = m.Provider.Value
	}
	size, _ = facts.Window(&m, s.Window)
	return size, facts.AnswerRoom(&m, s, size), nil
}

// modelFacts is what is known of s's model: Link's facts, the user's file
// over them, and, for a model on a runtime, what the runtime says it runs
// the model with. A runtime that does not answer says nothing.
func (t *turn) modelFacts(ctx context.Context, s *settings.Settings) (facts.Model, *facts.Book, error) {
	book, err := t.factsBook()
	if err != nil {
		return facts.Model{}, nil, err
	}
	m := book.Model(s.Model.Name)
	provider := s.Model.Provider
	if provider == "" {
		provider = m.Provider.Value
	}
	if rt, ok := t.runtime(ctx, provider, s.Model.Name); ok {
		m.SetRuntime(rt.Trained, rt.Runs)
	}
	return m, book, nil
}

// describeTimeout bounds asking a runtime about a model.
const describeTimeout = 5 * time.Second

// runtime asks provider, when it is a runtime on the machine, what it runs
// the model named name with.
func (t *turn) runtime(ctx context.Context, provider, name string) (model.Runtime, bool) {
	c, err := model.New(provider, t.r.getenv, t.r.HTTP)
	if err != nil {
		return model.Runtime{}, false
	}
	d, ok := c.(model.Describer)
	if !ok {
		return model.Runtime{}, false
	}
	own := model.OwnName(provider, name)
	key := strings.Join([]string{provider, t.r.getenv("LNK_MODEL_PROXY_" + strings.ToUpper(provider)), t.r.getenv("LNK_MODEL_PROXY"), own}, "\x00")
	now := time.Now()
	if trained, runs, ok := t.c.runtimes.Said(key, now); ok {
		return model.Runtime{Trained: trained, Runs: runs}, true
	}
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	rt, err := d.Describe(ctx, own)
	if err != nil {
		return model.Runtime{}, false
	}
	t.c.runtimes.Keep(key, rt.Trained, rt.Runs, now)
	return rt, true
}

// factsBook is the model facts, Link's with the user's file over them,
// read once a turn: the window is sized and the answer priced with the
// same facts, and the user's file is looked at once, not at each use.
func (t *turn) factsBook() (*facts.Book, error) {
	if t.comp.facts != nil {
		return t.comp.facts, nil
	}
	path, err := facts.UserPath(t.r.getenv)
	if err != nil {
		return nil, err
	}
	cache := t.r.Facts
	if cache == nil {
		cache = &t.c.facts
	}
	book, err := cache.Load(path)
	if err != nil {
		return nil, err
	}
	t.comp.facts = book
	return book, nil
}

// answerCost is what model calls that used u cost in USD, and where that
// figure comes from: what the provider said it charged (c), where it said
// so, 0 too; else u at the prices known of s's model. A cost priced at no
// known price has no source, and the event says nothing of it.
func (t *turn) answerCost(s *settings.Settings, u event.Usage, c model.Cost) (float64, string) {
	if c.Reported {
		return c.USD, event.CostReported
	}
	book, err := t.factsBook()
	if err != nil {
		return 0, ""
	}
	m := book.Model(s.Model.Name)
	if usd := facts.Cost(&m, u); usd != 0 {
		return usd, event.CostPriced
	}
	return 0, ""
}

// getenv reads the environment the runner was given; none is an empty one.
func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return ""
}

// stall is how long a model's stream may go without a byte:
// LNK_MODEL_STALL (a duration, "90s") when set, else the model package's
// default.
func (r *Runner) stall() time.Duration {
	if d, err := time.ParseDuration(r.getenv("LNK_MODEL_STALL")); err == nil && d > 0 {
		return d
	}
	return model.DefaultStall
}
