package turn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/trace"
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
		req.Stall = model.StallOf(t.r.getenv)
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
		return t.callFallback(ctx, s, req, err, relay)
	}
	return resp, t.facts().Refusal(ctx, err, s, req.Window)
}

// callFallback calls s's fallback model, the model having failed with
// first; answered, s and req become the fallback's.
func (t *turn) callFallback(ctx context.Context, s *settings.Settings, req *model.Request, first error, relay func(string)) (*model.Response, error) {
	t.log().Warn("model fallback", "model", s.Model.Name, "fallback", s.Model.Fallback, "error", first)
	var system func(string) (string, int) // the fallback's own instructions in the first's place
	if t.comp.sections != nil {
		system = func(name string) (string, int) { return t.systemFor(s, t.comp.sections, name) }
	}
	fs, freq, err := t.facts().Fallback(ctx, s, req, system)
	if err != nil {
		return nil, fmt.Errorf("%w; the fallback %s: %v", first, s.Model.Fallback, err)
	}
	resp, err := t.ask(ctx, fs.Provider(), freq, relay)
	if err != nil {
		err = fmt.Errorf("%s was unavailable (%v), and the fallback %s failed: %w", s.Model.Name, first, fs.Model.Name, err)
		return nil, t.facts().Refusal(ctx, err, &fs, freq.Window) // the refusal is the fallback's
	}
	*s, *req = fs, *freq
	return resp, nil
}

// ask calls provider's model once, timing the call.
func (t *turn) ask(ctx context.Context, provider string, req *model.Request, onText func(string)) (*model.Response, error) {
	c, err := t.r.Models.Get(provider, t.r.getenv, t.r.HTTP)
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

// getenv reads the environment the runner was given; none is an empty one.
func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return ""
}
