package modelfacts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/store/event"
)

// turnIn is a Turn reading the user's facts from a $LNK_HOME of its own,
// holding file (none when "").
func turnIn(t *testing.T, file string) *Turn {
	dir := t.TempDir()
	if file != "" {
		if err := os.WriteFile(filepath.Join(dir, facts.FileName), []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"LNK_HOME": dir}
	return &Turn{Getenv: func(k string) string { return env[k] }, Facts: &facts.Cache{}, Runtimes: &facts.Runtimes{}}
}

func TestCost(t *testing.T) {
	tu := turnIn(t, "[models.\"x/free\"]\nwindow = 1000\n")
	u := event.Usage{Input: 1_000_000, Output: 1_000_000}
	for _, c := range []struct {
		name, model string
		cost        model.Cost
		usd         float64
		source      string
	}{
		{"reported", "anthropic/claude-opus-5-5", model.Cost{Reported: true, USD: 0.25}, 0.25, event.CostReported},
		{"reported free", "anthropic/claude-opus-5-5", model.Cost{Reported: true}, 0, event.CostReported},
		{"priced from Link's facts", "anthropic/claude-opus-5-5", model.Cost{}, 30, event.CostPriced},
		{"no price known", "x/free", model.Cost{}, 0, ""},
	} {
		s := settings.Settings{}
		s.Model.Name = c.model
		usd, source := tu.Cost(&s, u, c.cost)
		if usd != c.usd || source != c.source {
			t.Errorf("%s: %v %q, want %v %q", c.name, usd, source, c.usd, c.source)
		}
	}
}

// The facts are read once a turn: the user's file changed after the
// first use is not seen by the same turn, and is by the next.
func TestReadOnceATurn(t *testing.T) {
	tu := turnIn(t, "[models.\"x/m\"]\nwindow = 1000\nanswer = 100\n")
	s := settings.Settings{}
	s.Model.Name = "x/m"
	size, _, err := tu.Window(context.Background(), &s)
	if err != nil || size != 1000 {
		t.Fatalf("window %d %v, want 1000", size, err)
	}
	path, _ := facts.UserPath(tu.Getenv)
	os.WriteFile(path, []byte("[models.\"x/m\"]\nwindow = 20000\nanswer = 100\n"), 0o600)
	if size, _, _ = tu.Window(context.Background(), &s); size != 1000 {
		t.Errorf("the same turn read window %d, want 1000 as first read", size)
	}
	next := &Turn{Getenv: tu.Getenv, Facts: tu.Facts, Runtimes: tu.Runtimes}
	if size, _, _ = next.Window(context.Background(), &s); size != 20000 {
		t.Errorf("the next turn read window %d, want 20000", size)
	}
}

// A refusal says the window the prompt was sized for, where it came from,
// and where to change it.
func TestRefusal(t *testing.T) {
	tu := turnIn(t, "")
	s := settings.Settings{}
	s.Model.Name = "anthropic/claude-opus-5-5"
	errLong := fmt.Errorf("%w: prompt is too long", model.ErrTooLong)
	err := tu.Refusal(context.Background(), errLong, &s, 0)
	path, _ := facts.UserPath(tu.Getenv)
	for _, w := range []string{"1000000 tokens", "[window] max", path} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v: does not say %q", err, w)
		}
	}
	if !errors.Is(err, errLong) {
		t.Error("the provider's error is not kept")
	}
}
