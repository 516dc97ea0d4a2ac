package turn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
)

// callModel asks the model through the proxy.
func (t *turn) callModel(ctx context.Context, s *settings.Settings, req *model.Request, onText func(string)) (*model.Response, error) {
	c, err := model.New(s.Provider(), t.r.getenv, t.r.HTTP)
	if err != nil {
		return nil, err
	}
	start := t.r.now()
	resp, err := c.Call(ctx, req, onText)
	t.modelTime += t.r.now().Sub(start)
	if err != nil {
		if errors.Is(err, model.ErrTooLong) {
			return nil, fmt.Errorf("%w: the prompt sent was at most %d tokens of window; set [window] max in the agent's spec to change it", err, modelWindow(s))
		}
		return nil, err
	}
	return resp, nil
}

func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

// modelWindow is the model's window in tokens: the spec's max when set,
// else what is known of the model (model facts come with the models work),
// else [window] unknown.
func modelWindow(s *settings.Settings) int {
	if s.Window.Max > 0 {
		return s.Window.Max
	}
	return s.Window.Unknown
}

// answerRoom is the tokens kept for the answer.
func answerRoom(s *settings.Settings, size int) int {
	if s.Model.Answer > 0 {
		return s.Model.Answer
	}
	return int(s.Window.Answer * float64(size))
}

// providerModel is the provider's own name for a model: OpenRouter names
// every model maker/model; the others know it without the maker.
func providerModel(provider, name string) string {
	if provider == "openrouter" {
		return name
	}
	if _, m, ok := strings.Cut(name, "/"); ok {
		return m
	}
	return name
}
