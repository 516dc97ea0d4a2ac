package server

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/tools"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/durable"
	"lnk.dev/linkharness/store/event"
)

// StateFormat names the archive of an agent's state that ASP's state
// methods take out and give back (API.md, "ASP state"): a tar holding the
// agent's settings, instructions, notes and skills as its home holds them,
// each conversation's events as chats/<dir>/events.jsonl and its tool
// restrictions as chats/<dir>/tools.json, and, last, manifest.json, which
// lists every other entry with its size and SHA-256.
const StateFormat = "lnk-state/1"

// MaxStateBytes is the largest archive PUT …/state takes.
const MaxStateBytes = 256 << 20

// manifest is an archive's last entry.
type manifest struct {
	Format        string           `json:"format"`
	Agent         string           `json:"agent"`
	Files         []manifestFile   `json:"files"`
	Conversations []manifestThread `json:"conversations"`
}

type manifestFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

type manifestThread struct {
	Dir    string `json:"dir"`
	Thread string `json:"thread"`
	Events int64  `json:"events"`
}

// toolsFile is chats/<dir>/tools.json in an archive, as in a home.
type toolsFile struct {
	Tools []string `json:"tools"`
}

// asp routes ASP's state methods: /asp/v1/agents/{agent}/state|status.
func (s *Server) asp(w http.ResponseWriter, r *http.Request, seg []string) {
	if len(seg) != 5 || seg[1] != "v1" || seg[2] != "agents" {
		s.refuse(w, "", "", http.StatusNotFound, "no such path %s", r.URL.Path)
		return
	}
	a, ok := s.authorize(w, r, seg[3], "")
	if !ok {
		return
	}
	name := a.Runner.Agent.Name
	switch seg[4] {
	case "status":
		if s.method(w, r, name, http.MethodGet) {
			s.status(w, a)
		}
	case "state":
		switch r.Method {
		case http.MethodGet:
			s.exportState(w, r, a)
		case http.MethodPut:
			s.importState(w, r, a)
		default:
			w.Header().Set("Allow", "GET, PUT")
			s.refuse(w, name, "", http.StatusMethodNotAllowed, "%s takes GET or PUT, not %s", r.URL.Path, r.Method)
		}
	default:
		s.refuse(w, name, "", http.StatusNotFound, "no such path %s", r.URL.Path)
	}
}

// status says whether a turn of the agent runs here, and of which threads.
func (s *Server) status(w http.ResponseWriter, a *served) {
	threads := a.Runner.Running()
	slices.Sort(threads)
	if threads == nil {
		threads = []string{}
	}
	writeJSON(w, http.StatusOK, struct {
		Agent   string   `json:"agent"`
		Running bool     `json:"running"`
		Threads []string `json:"threads"`
	}{a.Runner.Agent.Name, len(threads) > 0, threads})
}

// stateFiles returns the home's files an archive holds, as slash paths
// under the home, in order: settings, instructions, notes, skills.
func stateFiles(ag home.Agent) ([]string, error) {
	var out []string
	for _, p := range []home.Place{home.Config, home.Persona, home.Owner, home.Instruction} {
		out = append(out, must(ag.Path(p, "")))
	}
	models := filepath.Join(ag.Dir, "instructions", "models")
	found, _ := filepath.Glob(filepath.Join(models, "*", "*", "instruction.md"))
	out = append(out, found...)
	out = append(out, must(ag.Path(home.Notes, "")))
	skills, _ := filepath.Glob(filepath.Join(ag.Dir, "skills", "*", "SKILL.md"))
	out = append(out, skills...)
	var rel []string
	for _, p := range out {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		r, err := filepath.Rel(ag.Dir, p)
		if err != nil {
			return nil, err
		}
		rel = append(rel, filepath.ToSlash(r))
	}
	return rel, nil
}

func must(p string, _ error) string { return p }

// stateThreads returns the folders under chats/ a thread's name makes
// (home.IsThreadDir), by the rule now or the one before, in byte order.
func stateThreads(ag home.Agent) ([]string, error) {
	chats, err := ag.Path(home.Chats, "")
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(chats)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if !home.IsThreadDir(e.Name()) {
			continue // a conversion's folder, or a name the stores keep
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// archiveWriter writes tar entries and remembers each one's size and hash.
type archiveWriter struct {
	tw    *tar.Writer
	files []manifestFile
	now   time.Time
}

func (aw *archiveWriter) add(name string, b []byte) error {
	h := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), ModTime: aw.now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := aw.tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := aw.tw.Write(b); err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	aw.files = append(aw.files, manifestFile{Path: name, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])})
	return nil
}

// exportState streams the agent out as a StateFormat tar. An error once
// the archive has begun cuts the response short, so the archive is never
// taken for whole: without its manifest, PUT refuses it.
func (s *Server) exportState(w http.ResponseWriter, r *http.Request, a *served) {
	ag := a.Runner.Agent
	files, err := stateFiles(ag)
	if err != nil {
		s.fail(w, ag.Name, "", err)
		return
	}
	threads, err := stateThreads(ag)
	if err != nil {
		s.fail(w, ag.Name, "", err)
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", ag.Name+".tar"))
	bw := bufio.NewWriterSize(w, 64<<10)
	aw := &archiveWriter{tw: tar.NewWriter(bw), now: time.Unix(0, 0).UTC()}
	m := manifest{Format: StateFormat, Agent: ag.Name}
	cut := func(err error) {
		s.log.Error("state export cut short", "agent", ag.Name, "error", err)
		bw.Flush()
		panic(http.ErrAbortHandler)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(ag.Dir, filepath.FromSlash(f)))
		if err != nil {
			cut(err)
		}
		if err := aw.add(f, b); err != nil {
			cut(err)
		}
	}
	for _, dir := range threads {
		thread, events, err := readThread(r.Context(), a.Runner, dir)
		if err != nil {
			cut(fmt.Errorf("conversation %s: %w", dir, err))
		}
		if thread == "" {
			continue // an empty folder
		}
		var buf bytes.Buffer
		for _, ev := range events {
			buf.Write(ev)
			buf.WriteByte('\n')
		}
		if err := aw.add("chats/"+dir+"/events.jsonl", buf.Bytes()); err != nil {
			cut(err)
		}
		only, err := a.Runner.ToolsOf(r.Context(), thread)
		if err != nil {
			cut(fmt.Errorf("conversation %s: %w", dir, err))
		}
		if only != nil {
			b, _ := json.Marshal(toolsFile{Tools: append([]string{}, only.Entries...)})
			if err := aw.add("chats/"+dir+"/tools.json", append(b, '\n')); err != nil {
				cut(err)
			}
		}
		m.Conversations = append(m.Conversations, manifestThread{Dir: dir, Thread: thread, Events: int64(len(events))})
	}
	m.Files = aw.files
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := aw.add("manifest.json", append(b, '\n')); err != nil {
		cut(err)
	}
	if err := aw.tw.Close(); err != nil {
		cut(err)
	}
	if err := bw.Flush(); err != nil {
		cut(err)
	}
	a.Runner.Metrics.Did(metrics.OpExport)
	s.log.Info("state exported", "agent", ag.Name, "conversations", len(m.Conversations))
}

// readThread reads the conversation kept in folder dir: its thread (from
// its first event; "" when it has none) and its events, each its own copy.
func readThread(ctx context.Context, r *turn.Runner, dir string) (string, [][]byte, error) {
	path, err := r.Agent.ChatDir(dir)
	if err != nil {
		return "", nil, err
	}
	if r.Open == nil {
		return "", nil, turn.ErrNoOpener
	}
	conv, err := r.Open(path, "")
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	defer conv.Close()
	var (
		events [][]byte
		thread string
		derr   error
		dec    event.Decoder
		e      event.Event
	)
	err = conv.Read(ctx, 1, store.Forward, func(seq int64, ev []byte) bool {
		if seq == 1 {
			if derr = dec.Decode(ev, &e); derr != nil {
				return false
			}
			thread = e.Thread
		}
		events = append(events, append([]byte(nil), ev...))
		return true
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, nil
	}
	if err == nil {
		err = derr
	}
	return thread, events, err
}

// stateArchive is an archive read whole and checked, ready to be written.
type stateArchive struct {
	files   map[string][]byte // settings, instructions, notes, skills by slash path
	threads []importedThread
}

type importedThread struct {
	thread string
	events [][]byte
	only   *tools.Only
}

// errBadState is an archive refused: what is wrong with it.
var errBadState = errors.New("bad state archive")

// readState reads a StateFormat tar whole and checks it: every entry a
// file the format names, listed in the manifest, the last entry, with its
// size and hash; every conversation whole (seqs 1… without a gap, its
// first event naming a thread of its folder). Any fault is errBadState.
func readState(r io.Reader) (*stateArchive, error) {
	got, order, m, err := readStateTar(r)
	if err != nil {
		return nil, err
	}
	if err := m.check(got, order); err != nil {
		return nil, err
	}
	return stateOf(m, got, order)
}

// badState is errBadState, saying why.
func badState(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadState, fmt.Sprintf(format, args...))
}

// readStateTar reads a state tar's entries, by name and in order, and
// its manifest, which must be there and last; every entry is a file of
// MaxStateBytes at most, named once.
func readStateTar(r io.Reader) (got map[string][]byte, order []string, m *manifest, err error) {
	tr := tar.NewReader(r)
	got = map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, nil, badState("reading the tar after %d entries: %v", len(order), err)
		}
		if m != nil {
			return nil, nil, nil, badState("entry %q after manifest.json, which is the last", h.Name)
		}
		if h.Typeflag != tar.TypeReg {
			return nil, nil, nil, badState("entry %q is not a file", h.Name)
		}
		if _, dup := got[h.Name]; dup {
			return nil, nil, nil, badState("entry %q twice", h.Name)
		}
		if h.Size > MaxStateBytes {
			return nil, nil, nil, badState("entry %q of %d bytes", h.Name, h.Size)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, nil, badState("entry %q: %v", h.Name, err)
		}
		if h.Name == "manifest.json" {
			m = new(manifest)
			if err := json.Unmarshal(b, m); err != nil {
				return nil, nil, nil, badState("manifest.json: %v", err)
			}
			continue
		}
		got[h.Name] = b
		order = append(order, h.Name)
	}
	if m == nil {
		return nil, nil, nil, badState("no manifest.json: the archive is not whole")
	}
	return got, order, m, nil
}

// check says whether the archive's entries got, in order, are the files
// m lists, each with its size and hash.
func (m *manifest) check(got map[string][]byte, order []string) error {
	if m.Format != StateFormat {
		return badState("format %q, not %q", m.Format, StateFormat)
	}
	if len(m.Files) != len(order) {
		return badState("the manifest lists %d entries, the archive holds %d", len(m.Files), len(order))
	}
	for _, f := range m.Files {
		b, ok := got[f.Path]
		if !ok {
			return badState("%q is listed and not in the archive", f.Path)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return badState("%q is not the file the manifest lists (size or SHA-256)", f.Path)
		}
	}
	return nil
}

// stateOf sorts a checked archive's entries into an agent's files and its
// conversations, each whole and with its tools, as m lists them.
func stateOf(m *manifest, got map[string][]byte, order []string) (*stateArchive, error) {
	st := &stateArchive{files: map[string][]byte{}}
	convs := map[string]*importedThread{}
	for _, name := range order {
		dir, file, isChat := chatEntry(name)
		switch {
		case !isChat:
			if !homeFile(name) {
				return nil, badState("entry %q is not a file an agent's state holds", name)
			}
			st.files[name] = got[name]
		case file == "events.jsonl":
			t, err := checkEvents(dir, got[name])
			if err != nil {
				return nil, badState("%s: %v", name, err)
			}
			convs[dir] = t
		case file == "tools.json":
		default:
			return nil, badState("entry %q is not a file an agent's state holds", name)
		}
	}
	for _, name := range order {
		if dir, file, ok := chatEntry(name); ok && file == "tools.json" {
			t := convs[dir]
			if t == nil {
				return nil, badState("%s without its conversation's events", name)
			}
			var tf toolsFile
			if err := json.Unmarshal(got[name], &tf); err != nil || tf.Tools == nil {
				return nil, badState("%s: not {\"tools\": [...]}", name)
			}
			t.only = &tools.Only{Entries: tf.Tools}
		}
	}
	if len(m.Conversations) != len(convs) {
		return nil, badState("the manifest lists %d conversations, the archive holds %d", len(m.Conversations), len(convs))
	}
	for _, c := range m.Conversations {
		t := convs[c.Dir]
		if t == nil || t.thread != c.Thread || int64(len(t.events)) != c.Events {
			return nil, badState("conversation %q is not the one the manifest lists", c.Dir)
		}
		st.threads = append(st.threads, *t)
	}
	return st, nil
}

// chatEntry splits chats/<dir>/<file>.
func chatEntry(name string) (dir, file string, ok bool) {
	rest, ok := strings.CutPrefix(name, "chats/")
	if !ok {
		return "", "", false
	}
	dir, file, ok = strings.Cut(rest, "/")
	return dir, file, ok && !strings.Contains(file, "/")
}

// homeFile says whether name is a file of the home an archive may hold.
func homeFile(name string) bool {
	switch name {
	case "config.json", "instructions/persona.md", "instructions/owner.md", "instructions/instruction.md", "memory/notes.md":
		return true
	}
	if m, ok := strings.CutPrefix(name, "instructions/models/"); ok {
		model, ok := strings.CutSuffix(m, "/instruction.md")
		_, _, err := home.ModelParts(model)
		return ok && err == nil && path.Clean(name) == name
	}
	if sk, ok := strings.CutPrefix(name, "skills/"); ok {
		skill, ok := strings.CutSuffix(sk, "/SKILL.md")
		return ok && home.Plain(skill) == nil
	}
	return false
}

// checkEvents checks a conversation's JSONL: each line one event, seqs 1…
// without a gap, the first naming a thread whose folder is dir.
func checkEvents(dir string, b []byte) (*importedThread, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, errors.New("not whole lines")
	}
	t := &importedThread{}
	var dec event.Decoder
	var e event.Event
	for i, line := range bytes.Split(b[:len(b)-1], []byte{'\n'}) {
		if err := dec.Decode(line, &e); err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		if e.Seq != int64(i+1) {
			return nil, fmt.Errorf("line %d holds seq %d", i+1, e.Seq)
		}
		if i == 0 {
			// Its folder by the rule, or, in an archive taken out of a
			// home written before it, by the rule before.
			d, err := home.ThreadDir(e.Thread)
			if former, ok := home.FormerThreadDir(e.Thread); ok && former == dir {
				d = former
			}
			if err != nil || d != dir {
				return nil, fmt.Errorf("the first event names thread %q, not one kept in %q", e.Thread, dir)
			}
			t.thread = e.Thread
		}
		t.events = append(t.events, line)
	}
	return t, nil
}

// importState takes an agent's state in: the archive is read whole and
// checked before anything is written, so a partial or corrupt one is
// refused (400, saying what is wrong) with the home as it was. An agent
// that has a conversation already is refused (409): state is taken into a
// fresh home, never merged.
func (s *Server) importState(w http.ResponseWriter, r *http.Request, a *served) {
	ag := a.Runner.Agent
	st, err := readState(http.MaxBytesReader(w, r.Body, MaxStateBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, ag.Name, "", http.StatusRequestEntityTooLarge, "state over %d bytes", MaxStateBytes)
			return
		}
		s.refuse(w, ag.Name, "", http.StatusBadRequest, "%v", err)
		return
	}
	threads, err := stateThreads(ag)
	if err != nil {
		s.fail(w, ag.Name, "", err)
		return
	}
	for _, dir := range threads {
		if thread, _, err := readThread(r.Context(), a.Runner, dir); err != nil || thread != "" {
			s.refuse(w, ag.Name, "", http.StatusConflict, "agent %q has conversations already (%s): state is taken into a fresh home", ag.Name, dir)
			return
		}
	}
	names := make([]string, 0, len(st.files))
	for n := range st.files {
		names = append(names, n)
	}
	slices.Sort(names) // config.json first: the conversations are kept as it says
	for _, n := range names {
		p := filepath.Join(ag.Dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			s.fail(w, ag.Name, "", err)
			return
		}
		if err := durable.WriteFileAtomic(p, st.files[n], 0o600); err != nil {
			s.fail(w, ag.Name, "", err)
			return
		}
	}
	ctx := context.WithoutCancel(r.Context()) // begun, the import is finished
	for _, t := range st.threads {
		if err := a.Runner.Import(ctx, t.thread, t.events, t.only); err != nil {
			s.fail(w, ag.Name, t.thread, err)
			return
		}
		s.log.Info("conversation imported", "agent", ag.Name, "thread", t.thread, "seq", len(t.events))
	}
	a.Runner.Metrics.Did(metrics.OpImport)
	writeJSON(w, http.StatusOK, struct {
		Agent         string `json:"agent"`
		Files         int    `json:"files"`
		Conversations int    `json:"conversations"`
	}{ag.Name, len(st.files), len(st.threads)})
}
