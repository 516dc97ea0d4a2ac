package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/internal/osfile"
	"lnk.dev/linkharness/store/durable"
)

// ErrBadSpec comes when a spec or a config.json cannot be taken.
var ErrBadSpec = errors.New("settings: bad spec")

// Settings are an agent's settings, as config.json holds them. The zero
// value is not valid: use Defaults or Read.
type Settings struct {
	Model        Model              `json:"model"`
	Window       Window             `json:"window"`
	Storage      Storage            `json:"storage"`
	Turn         Turn               `json:"turn,omitzero"`
	Instructions map[string]Section `json:"instructions,omitempty"`
}

// Model is the spec's [model].
type Model struct {
	Name     string `json:"name"`               // as OpenRouter names it: maker/model, or runtime/model
	Provider string `json:"provider,omitempty"` // anthropic, openai, openrouter or ollama; by default the name's maker
	Fallback string `json:"fallback,omitempty"` // another model, tried when the first is unavailable
	Answer   int    `json:"answer,omitempty"`   // tokens kept for the answer; 0 means the window's share

	// Timeout bounds a whole model call, from the request to the answer's
	// end; 0 means the model package's default (10 minutes).
	Timeout Duration `json:"timeout,omitempty"`
}

// MaxTimeout is the longest [model] or [turn] timeout taken.
const MaxTimeout = 24 * time.Hour

// Duration is a time.Duration kept as its string, "10m0s", in config.json.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Turn is the spec's [turn].
type Turn struct {
	// Timeout bounds a turn's whole time, every round of model and tool
	// calls together, from its message taken to its answer; 0 means the
	// turn package's default (1 hour).
	Timeout Duration `json:"timeout,omitempty"`
}

// Window is the spec's [window].
type Window struct {
	Max       int     `json:"max,omitempty"`     // tokens sent at most; 0 means the model's window
	CompactAt float64 `json:"compact_at"`        // share of the room that starts a summary; 0 means never
	Unknown   int     `json:"unknown"`           // the window of a model nobody described
	Answer    float64 `json:"answer"`            // the answer's share of the window
	Margin    float64 `json:"margin"`            // the share kept for the rough count's error
	SaveNotes bool    `json:"save_notes"`        // save notes before a summary
	MaxSet    bool    `json:"max_set,omitempty"` // Max was set by the user or a team, not Link
}

// Storage is the spec's [storage].
type Storage struct {
	Conversations string `json:"conversations"` // log, compact or a driver's name: how a new conversation starts
}

// Section is one prompt section's source and its most, from [instructions].
type Section struct {
	Source string `json:"source"` // a file in the home, or "none" (a link, kept by an older configure, is left out)
	Most   int    `json:"most"`   // bytes at most
}

// Sections are the prompt's sections, in the order they are composed.
var Sections = []string{"base", "model", "tools", "environment", "repository", "skills", "persona", "owner", "instruction", "notes", "now"}

// DefaultModel is the model of an agent whose spec names none.
const DefaultModel = "anthropic/claude-opus-5-5"

// Defaults returns Link's settings.
func Defaults() Settings {
	return Settings{
		Model:   Model{Name: DefaultModel},
		Window:  Window{CompactAt: 0.75, Unknown: 32768, Answer: 0.125, Margin: 0.05, SaveNotes: true},
		Storage: Storage{Conversations: "log"},
	}
}

// Provider returns the provider that serves the model: the one set, else
// the name's maker.
func (s *Settings) Provider() string {
	if s.Model.Provider != "" {
		return s.Model.Provider
	}
	maker, _, _ := strings.Cut(s.Model.Name, "/")
	return maker
}

// Providers Link Harness speaks to.
var providers = []string{"anthropic", "openai", "openrouter", "ollama"}

// Read reads config.json at path. A missing file gives the defaults; keys
// missing from the file keep theirs.
func Read(path string) (Settings, error) {
	s, _, err := ReadFound(path)
	return s, err
}

// ReadFound is Read, and says whether config.json was there.
func ReadFound(path string) (Settings, bool, error) {
	s := Defaults()
	b, err := osfile.ReadFile(path, MaxConfigBytes)
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, true, err
	}
	if len(b) > MaxConfigBytes {
		return s, true, fmt.Errorf("%s: over %d bytes", path, MaxConfigBytes)
	}
	s, err = Decode(path, b)
	return s, true, err
}

// MaxConfigBytes is the largest config.json read: far past any agent's
// settings, short of a file that is not one.
const MaxConfigBytes = 4 << 20

// Decode reads settings as config.json holds them, from b, named name in
// an error: keys missing keep Link's defaults.
func Decode(name string, b []byte) (Settings, error) {
	s := Defaults()
	if len(b) > maxSpecBytes {
		return s, fmt.Errorf("%w: %s: %d bytes, over %d", ErrBadSpec, name, len(b), maxSpecBytes)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%w: %s: %v", ErrBadSpec, name, err)
	}
	if err := s.check(); err != nil {
		return s, fmt.Errorf("%w: %s: %v", ErrBadSpec, name, err)
	}
	return s, nil
}

// Write writes s as config.json at path: whole or not at all, durable
// before it returns.
func Write(path string, s Settings) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

const maxSpecBytes = 1 << 20

// spec is the TOML spec as written; values whose type varies are read as
// any and checked by hand.
type spec struct {
	Model struct {
		Name     *string `toml:"name"`
		Provider *string `toml:"provider"`
		Fallback *string `toml:"fallback"`
		Answer   *int64  `toml:"answer"`
		Timeout  *string `toml:"timeout"`
	} `toml:"model"`
	Window struct {
		Max       *int64   `toml:"max"`
		CompactAt any      `toml:"compact_at"`
		Unknown   *int64   `toml:"unknown"`
		Answer    *float64 `toml:"answer"`
		Margin    *float64 `toml:"margin"`
		SaveNotes *bool    `toml:"save_notes"`
	} `toml:"window"`
	Storage struct {
		Conversations *string `toml:"conversations"`
	} `toml:"storage"`
	Turn struct {
		Timeout *string `toml:"timeout"`
	} `toml:"turn"`
	Instructions map[string]any `toml:"instructions"`
}

// Parse reads the spec of the agent whose home is dir. An unknown key, a
// bad value, or one a turn would not act on (a source no turn reads, a key
// another key overrides) is refused with the spec's name, the line it is
// on, and what to write instead.
func Parse(name string, src []byte, dir string) (Settings, error) {
	s := Defaults()
	if len(src) > maxSpecBytes {
		return s, fmt.Errorf("%w: %s: %d bytes, over %d", ErrBadSpec, name, len(src), maxSpecBytes)
	}
	var sp spec
	dec := toml.NewDecoder(bytes.NewReader(src)).DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return s, tomlError(name, err)
	}
	bad := func(table, key, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: [%s] %s: %s", ErrBadSpec, name, lineOf(src, table, key), table, key, fmt.Sprintf(format, args...))
	}
	instructions := func(sp *spec, s *Settings, bad badFunc) error {
		return parseInstructions(sp, s, bad, home.Agent{Dir: dir})
	}
	for _, step := range []func(*spec, *Settings, badFunc) error{parseModel, parseWindow, parseStorage, parseTurn, instructions, overridden} {
		if err := step(&sp, &s, bad); err != nil {
			return s, err
		}
	}
	return s, s.check()
}

// badFunc makes the error of a bad value of key in [table], naming the
// spec and the line.
type badFunc func(table, key, format string, args ...any) error

// parseModel takes [model].
func parseModel(sp *spec, s *Settings, bad badFunc) error {
	m := &sp.Model
	if m.Name != nil {
		if _, _, ok := strings.Cut(*m.Name, "/"); !ok || strings.TrimSpace(*m.Name) != *m.Name {
			return bad("model", "name", "%q is not maker/model (anthropic/claude-opus-5-5, ollama/qwen3:8b)", *m.Name)
		}
		s.Model.Name = *m.Name
	}
	if m.Provider != nil {
		if !contains(providers, *m.Provider) {
			return bad("model", "provider", "%q is not one of %s", *m.Provider, strings.Join(providers, ", "))
		}
		s.Model.Provider = *m.Provider
	} else if maker, _, _ := strings.Cut(s.Model.Name, "/"); !contains(providers, maker) {
		return bad("model", "name", "no provider is named for maker %q: set [model] provider", maker)
	}
	if m.Fallback != nil {
		if _, _, ok := strings.Cut(*m.Fallback, "/"); !ok {
			return bad("model", "fallback", "%q is not maker/model", *m.Fallback)
		}
		s.Model.Fallback = *m.Fallback
	}
	if m.Answer != nil {
		if *m.Answer <= 0 || *m.Answer > 1<<24 {
			return bad("model", "answer", "%d tokens is out of range", *m.Answer)
		}
		s.Model.Answer = int(*m.Answer)
	}
	if m.Timeout != nil {
		d, err := parseTimeout(*m.Timeout)
		if err != nil {
			return bad("model", "timeout", "%v", err)
		}
		s.Model.Timeout = d
	}
	return nil
}

// parseTurn takes [turn].
func parseTurn(sp *spec, s *Settings, bad badFunc) error {
	if v := sp.Turn.Timeout; v != nil {
		d, err := parseTimeout(*v)
		if err != nil {
			return bad("turn", "timeout", "%v", err)
		}
		s.Turn.Timeout = d
	}
	return nil
}

// parseTimeout takes a timeout: a Go duration from 1ms to MaxTimeout.
func parseTimeout(v string) (Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond || d > MaxTimeout {
		return 0, fmt.Errorf("%q is not a duration from 1ms to %v (\"10m\", \"90s\")", v, MaxTimeout)
	}
	return Duration(d), nil
}

// parseWindow takes [window].
func parseWindow(sp *spec, s *Settings, bad badFunc) error {
	w := &sp.Window
	if w.Max != nil {
		if *w.Max < 1024 || *w.Max > 1<<26 {
			return bad("window", "max", "%d tokens is out of range (1024 to %d)", *w.Max, 1<<26)
		}
		s.Window.Max, s.Window.MaxSet = int(*w.Max), true
	}
	if err := parseCompactAt(w.CompactAt, s, bad); err != nil {
		return err
	}
	if w.Unknown != nil {
		if *w.Unknown < 1024 || *w.Unknown > 1<<26 {
			return bad("window", "unknown", "%d tokens is out of range", *w.Unknown)
		}
		s.Window.Unknown = int(*w.Unknown)
	}
	for _, f := range []struct {
		key string
		v   *float64
		to  *float64
	}{{"answer", w.Answer, &s.Window.Answer}, {"margin", w.Margin, &s.Window.Margin}} {
		if f.v == nil {
			continue
		}
		if !(*f.v >= 0 && *f.v < 1) || math.IsNaN(*f.v) {
			return bad("window", f.key, "%v is not a share between 0 and 1", *f.v)
		}
		*f.to = *f.v
	}
	if w.SaveNotes != nil {
		s.Window.SaveNotes = *w.SaveNotes
	}
	return nil
}

// parseCompactAt takes [window] compact_at: a share, or "never".
func parseCompactAt(v any, s *Settings, bad badFunc) error {
	switch v := v.(type) {
	case nil:
	case string:
		if v != "never" {
			return bad("window", "compact_at", "%q is neither a share (0.75) nor \"never\"", v)
		}
		s.Window.CompactAt = 0
	case float64:
		if !(v > 0 && v <= 1) {
			return bad("window", "compact_at", "%v is not a share between 0 and 1", v)
		}
		s.Window.CompactAt = v
	default:
		return bad("window", "compact_at", "%v is neither a share (0.75) nor \"never\"", v)
	}
	return nil
}

// parseStorage takes [storage].
func parseStorage(sp *spec, s *Settings, bad badFunc) error {
	if c := sp.Storage.Conversations; c != nil {
		if err := checkStorage(*c); err != nil {
			return bad("storage", "conversations", "%v", err)
		}
		s.Storage.Conversations = *c
	}
	return nil
}

// overridden refuses a key another key of the spec makes do nothing, so
// every key written acts.
func overridden(sp *spec, _ *Settings, bad badFunc) error {
	if sp.Window.Answer != nil && sp.Model.Answer != nil {
		return bad("window", "answer", "does nothing while [model] answer is set, whose tokens are kept for the answer whatever the window: keep one of the two")
	}
	if sp.Window.Unknown != nil && sp.Window.Max != nil {
		return bad("window", "unknown", "does nothing while [window] max is set, which is the window of every model, described or not: keep one of the two")
	}
	return nil
}

// parseInstructions takes [instructions], a source for each section, each
// one a turn reads: a file in a's home, or none.
func parseInstructions(sp *spec, s *Settings, bad badFunc, a home.Agent) error {
	if len(sp.Instructions) > 0 {
		s.Instructions = map[string]Section{}
	}
	for key, v := range sp.Instructions {
		if !contains(Sections, key) {
			return bad("instructions", key, "no such section (the sections: %s)", strings.Join(Sections, ", "))
		}
		sec, err := section(v)
		if err == nil {
			err = sec.acts(a)
		}
		if err != nil {
			return bad("instructions", key, "%v", err)
		}
		s.Instructions[key] = sec
	}
	return nil
}

// acts says why a section's source or most would do nothing at a turn, if
// it would: a link (a turn never waits on another server, nor changes with
// one), a file outside a's home or the home itself, a most for a section
// left out, or neither a source nor a most.
func (sec Section) acts(a home.Agent) error {
	switch src := sec.Source; {
	case src == "" && sec.Most == 0:
		return errors.New("neither a source nor a most: name a file in the agent's home or \"none\", or set most")
	case src == "none" && sec.Most > 0:
		return errors.New("most does nothing for a section left out: drop most, or name a file")
	case IsLink(src):
		return fmt.Errorf("%s is a link, which a turn never reads: save what it holds in the agent's home and name that file", src)
	case src != "" && src != "none":
		rel, err := a.Rel(src)
		if err != nil || rel == "." {
			return fmt.Errorf("%s is not a file in the agent's home, the only place a turn reads: name a path relative to the home, or beneath it", src)
		}
	}
	return nil
}

// IsLink tells whether a source is a link (https://…) rather than a file:
// a turn leaves such a section out, and configure refuses it.
func IsLink(source string) bool { return strings.Contains(source, "://") }

func section(v any) (Section, error) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return Section{}, errors.New("empty source: name a file in the agent's home, or \"none\"")
		}
		return Section{Source: v}, nil
	case map[string]any:
		var sec Section
		for k, x := range v {
			switch k {
			case "source":
				s, ok := x.(string)
				if !ok || s == "" {
					return sec, fmt.Errorf("source %v is not a file in the agent's home, or \"none\"", x)
				}
				sec.Source = s
			case "most":
				n, ok := x.(int64)
				if !ok || n <= 0 || n > 1<<20 {
					return sec, fmt.Errorf("most %v is not a number of bytes from 1 to %d", x, 1<<20)
				}
				sec.Most = int(n)
			default:
				return sec, fmt.Errorf("unknown key %q (source, most)", k)
			}
		}
		return sec, nil
	}
	return Section{}, fmt.Errorf("%v is neither a source nor {source, most}", v)
}

func checkStorage(c string) error {
	if c == "log" || c == "compact" {
		return nil
	}
	if c == "" || len(c) > 64 {
		return fmt.Errorf("%q is not log, compact or a driver's name", c)
	}
	for i := 0; i < len(c); i++ {
		if b := c[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-') {
			return fmt.Errorf("%q is not log, compact or a driver's name", c)
		}
	}
	return nil
}

// check is what every Settings must hold, from a spec or from config.json.
func (s *Settings) check() error {
	if _, _, ok := strings.Cut(s.Model.Name, "/"); !ok {
		return fmt.Errorf("model %q is not maker/model", s.Model.Name)
	}
	if !contains(providers, s.Provider()) {
		return fmt.Errorf("provider %q is not one of %s", s.Provider(), strings.Join(providers, ", "))
	}
	if s.Model.Timeout < 0 || time.Duration(s.Model.Timeout) > MaxTimeout {
		return fmt.Errorf("model timeout %v is out of range", time.Duration(s.Model.Timeout))
	}
	if s.Turn.Timeout < 0 || time.Duration(s.Turn.Timeout) > MaxTimeout {
		return fmt.Errorf("turn timeout %v is out of range", time.Duration(s.Turn.Timeout))
	}
	if s.Window.Unknown <= 0 {
		return errors.New("window.unknown must be positive")
	}
	return checkStorage(s.Storage.Conversations)
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// tomlError names the line of a TOML error.
func tomlError(name string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		row, _ := e.Position()
		return fmt.Errorf("%w: %s:%d: unknown key %s", ErrBadSpec, name, row, strings.Join(e.Key(), "."))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return fmt.Errorf("%w: %s:%d: %v", ErrBadSpec, name, row, de.Error())
	}
	return fmt.Errorf("%w: %s: %v", ErrBadSpec, name, err)
}

// lineOf finds the line of key in [table], for errors about values TOML
// read well but Link Harness cannot take. It returns 0 when not found.
func lineOf(src []byte, table, key string) int {
	cur := ""
	for i, line := range strings.Split(string(src), "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			cur = strings.Trim(l, "[] ")
			if cur == table+"."+key { // [instructions.persona]: the key is a table
				return i + 1
			}
			continue
		}
		k, _, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		if (cur == table && k == key) || (cur == "" && k == table+"."+key) {
			return i + 1
		}
	}
	return 0
}
