package facts

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/sys/unix"

	"lnk.dev/linkharness/harness/internal/missing"
)

// ErrBadFacts comes when a file of model facts cannot be taken: not TOML,
// an unknown key, or a value out of range. The error names the file, the
// line when known, and the model.
var ErrBadFacts = errors.New("facts: bad model facts")

// FileName is the user's file of model facts, in $LNK_HOME.
const FileName = "model-facts.toml"

// maxFileBytes is the largest file of model facts read.
const maxFileBytes = 4 << 20

// linkFile is Link's file of model facts.
//
//go:embed link.toml
var linkFile []byte

// LinkFile returns Link's file of model facts, as built into the program.
func LinkFile() []byte { return slices.Clone(linkFile) }

// Source says where a fact came from.
type Source string

// Sources of facts, strongest first.
const (
	Unknown Source = ""             // nobody described it
	User    Source = "user file"    // $LNK_HOME/model-facts.toml
	Runtime Source = "runtime"      // what a runtime on the machine runs the model with
	Link    Source = "link"         // Link's file, built in
	Agent   Source = "agent spec"   // the agent's own spec: a [window] max the user or a team set
	Spec    Source = "spec default" // the spec's default: [window] unknown, Link's [window] max
	Name    Source = "name"         // the provider: the model name's maker
)

// Fact is one field's value and where it came from; From is Unknown when
// nobody described it, and then Value is the zero value.
type Fact[T any] struct {
	Value T
	From  Source
}

// Known says whether somebody described the field.
func (f Fact[T]) Known() bool { return f.From != Unknown }

// Model is what is known of one model.
type Model struct {
	Name     string
	Provider Fact[string]
	Window   Fact[int] // tokens
	Answer   Fact[int] // the longest answer, tokens

	// Prices, USD per million tokens.
	Input, Output, CacheRead, CacheWrite Fact[float64]
}

// entry is one model's table as a file holds it; nil is a field the file
// leaves out.
type entry struct {
	Provider   *string  `toml:"provider"`
	Window     *int64   `toml:"window"`
	Answer     *int64   `toml:"answer"`
	Input      *float64 `toml:"input"`
	Output     *float64 `toml:"output"`
	CacheRead  *float64 `toml:"cache_read"`
	CacheWrite *float64 `toml:"cache_write"`
}

type file struct {
	Models map[string]entry `toml:"models"`
}

// providers are the providers a model's facts may name.
var providers = []string{"anthropic", "openai", "openrouter", "ollama"}

// maxTokens bounds a window or an answer.
const maxTokens = 1 << 26

// parse reads a file of model facts; name says which in errors.
func parse(name string, b []byte) (map[string]entry, error) {
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, over %d", ErrBadFacts, name, len(b), maxFileBytes)
	}
	var f file
	if err := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields().Decode(&f); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			e := strict.Errors[0]
			row, _ := e.Position()
			return nil, fmt.Errorf("%w: %s:%d: unknown key %s (window, answer, provider, input, output, cache_read, cache_write)",
				ErrBadFacts, name, row, strings.Join(e.Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadFacts, name, row, de.Error())
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFacts, name, err)
	}
	for model, e := range f.Models {
		if err := e.check(model); err != nil {
			return nil, fmt.Errorf("%w: %s: [models.%q] %v", ErrBadFacts, name, model, err)
		}
	}
	return f.Models, nil
}

func (e *entry) check(model string) error {
	if _, _, ok := strings.Cut(model, "/"); !ok {
		return errors.New("the name is not maker/model (anthropic/claude-opus-5-5, ollama/qwen3:8b)")
	}
	if e.Provider != nil && !slices.Contains(providers, *e.Provider) {
		return fmt.Errorf("provider %q is not one of %s", *e.Provider, strings.Join(providers, ", "))
	}
	for _, f := range []struct {
		key string
		v   *int64
	}{{"window", e.Window}, {"answer", e.Answer}} {
		if f.v != nil && (*f.v < 1 || *f.v > maxTokens) {
			return fmt.Errorf("%s %d is not a number of tokens from 1 to %d", f.key, *f.v, maxTokens)
		}
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"input", e.Input}, {"output", e.Output}, {"cache_read", e.CacheRead}, {"cache_write", e.CacheWrite}} {
		if f.v != nil && !(*f.v >= 0 && *f.v < 1e6) { // NaN too

			return fmt.Errorf("%s %v is not a price in USD per million tokens", f.key, *f.v)
		}
	}
	return nil
}

// linkFacts is Link's file, read once.
var linkFacts = sync.OnceValues(func() (map[string]entry, error) { return parse("link.toml", linkFile) })

// Book is the facts of every model described: Link's, with the user's over
// them. It does not change once made, and is safe for concurrent use.
type Book struct {
	link map[string]entry
	user map[string]entry
	path string // the user's file; "" when none was read
}

// Path is the user's file the book read, or "" when there was none.
func (b *Book) Path() string { return b.path }

// UserPath is the user's file of model facts: $LNK_HOME/model-facts.toml,
// LNK_HOME being ~/.lnk when not set.
func UserPath(getenv func(string) string) (string, error) {
	home := getenv("LNK_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("facts: no LNK_HOME and no home folder: %w", err)
		}
		home = filepath.Join(h, ".lnk")
	}
	return filepath.Join(home, FileName), nil
}

// Cache keeps the user's file last read while it does not change, so a
// turn does not parse it again, and a missing file while its folder does
// not change, so a turn does not stat it (see package missing). Its zero
// value is ready; it is safe for concurrent use. A Runner holds one, so
// nothing of it is the process's.
type Cache struct {
	mu   sync.Mutex // guards the fields below
	path string
	mod  time.Time
	size int64
	book *Book

	missing missing.Files    // the user's file, when it was found missing
	kernel  func() time.Time // the time a folder's times are of: nil is time.Now; tests set a later one
}

// Load is Cache.Load without a cache: the user's file is read again.
func Load(path string) (*Book, error) {
	var c Cache
	return c.Load(path)
}

// Load returns Link's facts with the user's file at path over them, the
// book last made while the file is unchanged. A
// missing file is no error: Link's facts alone. A file that cannot be
// taken is an error naming it, not skipped: a window it meant to set
// would silently not be.
func (c *Cache) Load(path string) (*Book, error) {
	link, err := linkFacts()
	if err != nil {
		return nil, err
	}
	turn := c.missing.Turn()
	gone, known := c.missing.Missing(path, turn)
	if gone {
		return &Book{link: link}, nil
	}
	seen := time.Now() // the kernel's clock, which a folder's times are of
	if c.kernel != nil {
		seen = c.kernel()
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		// Stat follows a symlink: only a name with no entry at all, not
		// a dangling symlink, is missing until its folder changes.
		var st unix.Stat_t
		if unix.Lstat(path, &st) == unix.ENOENT {
			c.missing.Gone(path, turn, seen)
		}
		return &Book{link: link}, nil
	}
	if known {
		c.missing.Forget(path)
	}
	if err != nil {
		return nil, fmt.Errorf("facts: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.book != nil && c.path == path && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c.book, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("facts: %w", err)
	}
	user, err := parse(path, b)
	if err != nil {
		return nil, err
	}
	book := &Book{link: link, user: user, path: path}
	c.path, c.mod, c.size, c.book = path, fi.ModTime(), fi.Size(), book
	return book, nil
}

// Model returns what is known of the model named name, field by field: the
// user's file where it says, else Link's. The provider nobody names is the
// name's maker.
func (b *Book) Model(name string) Model {
	m := Model{Name: name}
	for _, src := range []struct {
		e    entry
		ok   bool
		from Source
	}{{b.link[name], b.link != nil, Link}, {b.user[name], b.user != nil, User}} {
		if !src.ok {
			continue
		}
		e := &src.e
		set(&m.Provider, e.Provider, src.from)
		setInt(&m.Window, e.Window, src.from)
		setInt(&m.Answer, e.Answer, src.from)
		set(&m.Input, e.Input, src.from)
		set(&m.Output, e.Output, src.from)
		set(&m.CacheRead, e.CacheRead, src.from)
		set(&m.CacheWrite, e.CacheWrite, src.from)
	}
	if !m.Provider.Known() {
		maker, _, _ := strings.Cut(name, "/")
		m.Provider = Fact[string]{Value: maker, From: Name}
	}
	return m
}

func set[T any](f *Fact[T], v *T, from Source) {
	if v != nil {
		*f = Fact[T]{Value: *v, From: from}
	}
}

func setInt(f *Fact[int], v *int64, from Source) {
	if v != nil {
		*f = Fact[int]{Value: int(*v), From: from}
	}
}

// SetRuntime takes in what a runtime on the machine says it runs the model
// with: it knows better than any file but the user's. A trained window
// counts only up to the one it runs with (Ollama runs a model with a small
// window unless told), so the window is the smaller of the two; the user's
// file, or a window the spec sets, says otherwise.
func (m *Model) SetRuntime(trained, runs int) {
	if m.Window.From == User {
		return
	}
	w := runs
	if trained > 0 && (w <= 0 || trained < w) {
		w = trained
	}
	if w > 0 {
		m.Window = Fact[int]{Value: w, From: Runtime}
	}
}
