package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"lnk.dev/linkharness/harness/facts"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
)

// cmdModelShow is `lnk model show NAME`: what is known of a model, and
// where each field came from.
func cmdModelShow(f flags, args []string, getenv func(string) string) error {
	return modelShow(os.Stdout, f.FlagSet, args, getenv)
}

// showTimeout bounds asking a runtime about a model.
const showTimeout = 5 * time.Second

// modelShow prints on w each fact of the model args name with its source:
// the user's file, a runtime on the machine, Link's, or the spec's
// default. fs, lnk model show's, says its usage and mistakes on w too.
func modelShow(w io.Writer, fs *flag.FlagSet, args []string, getenv func(string) string) error {
	fs.SetOutput(w)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("model show: name one model, maker/model")
	}
	name := fs.Arg(0)
	if _, _, ok := strings.Cut(name, "/"); !ok {
		return fmt.Errorf("model show: %q is not maker/model (anthropic/claude-opus-5-5, ollama/qwen3:8b)", name)
	}
	path, err := facts.UserPath(getenv)
	if err != nil {
		return err
	}
	book, err := facts.Load(path)
	if err != nil {
		return err
	}
	m := book.Model(name)
	runtimeNote := askRuntime(&m, getenv)

	spec := settings.Defaults()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n", name)
	row := func(field, value string, from facts.Source, note string) {
		src := string(from)
		if note != "" {
			src += " (" + note + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", field, value, src)
	}
	row("provider", m.Provider.Value, m.Provider.From, map[bool]string{true: "the name's maker"}[m.Provider.From == facts.Name])
	window, from := facts.Window(&m, spec.Window)
	note := ""
	switch from {
	case facts.Runtime:
		note = runtimeNote
	case facts.Spec:
		note = "[window] unknown: nobody described the model"
	}
	row("window", tokens(window), from, note)
	answer, answerFrom, note := facts.AnswerRoom(&m, &spec, window), m.Answer.From, ""
	if !m.Answer.Known() {
		answerFrom, note = facts.Spec, "[window] answer: "+strconv.FormatFloat(spec.Window.Answer, 'f', -1, 64)+" of the window"
	} else {
		answer = m.Answer.Value
	}
	row("answer", tokens(answer), answerFrom, note)
	for _, p := range []struct {
		field string
		f     facts.Fact[float64]
	}{{"input", m.Input}, {"output", m.Output}, {"cache_read", m.CacheRead}, {"cache_write", m.CacheWrite}} {
		if !p.f.Known() {
			row(p.field, "unknown", "nobody described it", "")
			continue
		}
		row(p.field, "$"+strconv.FormatFloat(p.f.Value, 'f', -1, 64)+" per million tokens", p.f.From, "")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	yours := path + " (none)"
	if book.Path() != "" {
		yours = book.Path()
	}
	if runtimeNote != "" && from != facts.Runtime {
		fmt.Fprintf(w, "runtime: %s\n", runtimeNote)
	}
	_, err = fmt.Fprintf(w, "link: built into this program; user file: %s\n", yours)
	return err
}

// askRuntime asks the runtime that serves m, if it is one (Ollama), what
// it runs the model with, and takes it into m. It returns what the runtime
// said, or why it said nothing; "" when m is on no runtime.
func askRuntime(m *facts.Model, getenv func(string) string) string {
	provider := m.Provider.Value
	c, err := model.New(provider, getenv, &http.Client{Timeout: showTimeout})
	if err != nil {
		if provider == "ollama" {
			return "not asked: " + err.Error()
		}
		return ""
	}
	d, ok := c.(model.Describer)
	if !ok {
		return ""
	}
	_, own, _ := strings.Cut(m.Name, "/")
	ctx, cancel := context.WithTimeout(context.Background(), showTimeout)
	defer cancel()
	rt, err := d.Describe(ctx, own)
	if err != nil {
		return "not reached: " + err.Error()
	}
	m.SetRuntime(rt.Trained, rt.Runs)
	trained := "not said"
	if rt.Trained > 0 {
		trained = tokens(rt.Trained)
	}
	return provider + " runs it with " + tokens(rt.Runs) + "; trained for " + trained
}

// tokens writes n tokens with thousands separated: 1,000,000 tokens.
func tokens(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + " tokens"
}
