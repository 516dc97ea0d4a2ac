package turn

import (
	"context"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// modelRunner is a runner whose model proxy is the scripted model, with
// LNK_HOME a folder of its own (no model facts of the user's unless a test
// writes them) and env's keys over those.
func modelRunner(t *testing.T, script *scripted.Script, s settings.Settings, env map[string]string) (*Runner, *scripted.Server, string) {
	t.Helper()
	srv, proxy := hometest.Model(t, script)
	dir, all := hometest.Agent(t, s, proxy)
	root := all["LNK_HOME"]
	for k, v := range env {
		all[k] = v
	}
	r := &Runner{Agent: home.Agent{Name: "ada", Dir: dir}, Getenv: func(k string) string { return all[k] }, HTTP: &http.Client{}, Metrics: &metrics.Agent{Name: "ada"}, Open: openLog}
	return r, srv, root
}

func withModel(name, provider string) settings.Settings {
	s := settings.Defaults()
	s.Model.Name, s.Model.Provider = name, provider
	return s
}

// events reads a conversation's events, in the folder that holds it.
func events(t *testing.T, r *Runner, thread string) []event.Event {
	t.Helper()
	dir, err := r.Folder(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return readLog(t, dir)
}

// readLog reads the events of the log in folder dir.
func readLog(t *testing.T, dir string) []event.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	var d event.Decoder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e event.Event
		if err := d.Decode([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// lastIsMessage checks a failed turn left the conversation as it was: its
// message kept, no answer after it.
func lastIsMessage(t *testing.T, r *Runner, thread string, n int, text string) {
	t.Helper()
	ev := events(t, r, thread)
	last := ev[len(ev)-1]
	if len(ev) != n || last.Type != event.TypeMessage || last.Text != text {
		t.Errorf("%d events, the last %s %q; want %d, the message %q", len(ev), last.Type, last.Text, n, text)
	}
}

var modelCases = []struct {
	name, provider string
	window         string // the window the refusal names, and where it came from
	path           string
}{
	{"anthropic/claude-opus-5-5", "", "1000000 tokens (link)", `"model":"claude-opus-5-5"`},
	{"openai/gpt-6-luna", "", "400000 tokens (link)", `"model":"gpt-6-luna"`},
	{"anthropic/claude-opus-5.5", "", "1000000 tokens (link)", `"model":"anthropic/claude-opus-5.5"`}, // OpenRouter's name: its facts name the provider
	{"ollama/qwen3:8b", "", "4096 tokens (runtime)", `"model":"qwen3:8b"`},
}

// A provider refusing the prompt as too long is reported as that, with the
// window sent and where to change it; the conversation is left as it was.
func TestRefusal(t *testing.T) {
	script := &scripted.Script{
		Rules:  []scripted.Rule{{Match: "huge", Refuse: true}},
		Models: []scripted.Model{{Name: "qwen3:8b", ContextLength: 40960}},
	}
	for _, tt := range modelCases {
		t.Run(tt.name, func(t *testing.T) {
			r, srv, root := modelRunner(t, script, withModel(tt.name, tt.provider), nil)
			ctx := context.Background()
			if _, err := r.Message(ctx, "t", Message{Text: "hello"}, nil); err != nil {
				t.Fatal(err)
			}
			if req := lastRequest(t, srv); !strings.Contains(req, tt.path) {
				t.Errorf("request %s lacks %s", req, tt.path)
			}
			_, err := r.Message(ctx, "t", Message{Text: "huge"}, nil)
			if !errors.Is(err, model.ErrTooLong) {
				t.Fatalf("error %v, want a refusal", err)
			}
			for _, says := range []string{"window of " + tt.window, "[window] max in the agent's spec", filepath.Join(root, "model-facts.toml"), `[models."` + tt.name + `"]`} {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("%q does not say %q", err, says)
				}
			}
			lastIsMessage(t, r, "t", 3, "huge")
		})
	}
}

// Ollama is sent the window it is to run the model with, found in order:
// the spec's max when set, the user's file, what Ollama runs the model
// with (its trained window counting up to that), Link's.
func TestOllamaWindow(t *testing.T) {
	script := &scripted.Script{Models: []scripted.Model{
		{Name: "qwen3:8b", ContextLength: 40960, NumCtx: 8192},
		{Name: "small:1b", ContextLength: 2048, NumCtx: 8192},
	}}
	set := withModel("ollama/qwen3:8b", "")
	set.Window.Max, set.Window.MaxSet = 65536, true
	linkMax := withModel("ollama/qwen3:8b", "")
	linkMax.Window.Max = 6000
	tests := []struct {
		name string
		s    settings.Settings
		user string
		want string
	}{
		{"what Ollama runs it with", withModel("ollama/qwen3:8b", ""), "", `"num_ctx":8192,"num_predict":1024`},
		{"trained less than it runs", withModel("ollama/small:1b", ""), "", `"num_ctx":2048,`},
		{"the user's file", withModel("ollama/qwen3:8b", ""), "[models.\"ollama/qwen3:8b\"]\nwindow = 16384\n", `"num_ctx":16384,"num_predict":2048`},
		{"the spec's max, set", set, "[models.\"ollama/qwen3:8b\"]\nwindow = 16384\n", `"num_ctx":65536,"num_predict":8192`},
		{"Link's max held to the model's", linkMax, "", `"num_ctx":6000,"num_predict":750`},
		{"not on the runtime: Link's", withModel("ollama/gpt-oss:20b", ""), "", `"num_ctx":131072,"num_predict":16384`},
		{"nobody's: [window] unknown", withModel("ollama/nothing:1b", ""), "", `"num_ctx":32768,"num_predict":4096`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, srv, root := modelRunner(t, script, tt.s, nil)
			if tt.user != "" {
				os.WriteFile(filepath.Join(root, "model-facts.toml"), []byte(tt.user), 0o600)
			}
			if _, err := r.Message(context.Background(), "t", Message{Text: "hi"}, nil); err != nil {
				t.Fatal(err)
			}
			if req := lastRequest(t, srv); !strings.Contains(req, tt.want) {
				t.Errorf("request %s lacks %s", req, tt.want)
			}
		})
	}
}

// The answer records the provider's counts and their cost at the model's
// prices, the user's file winning field by field.
func TestCost(t *testing.T) {
	script := &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "ok",
		Usage: scripted.Usage{Input: 1000, Output: 200, CacheRead: 10000, CacheWrite: 100}}}}
	r, _, root := modelRunner(t, script, withModel("anthropic/claude-opus-5-5", ""), nil)
	ctx := context.Background()
	if _, err := r.Message(ctx, "t", Message{Text: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "model-facts.toml"), []byte("[models.\"anthropic/claude-opus-5-5\"]\noutput = 50.0\n"), 0o600)
	if _, err := r.Message(ctx, "t", Message{Text: "two"}, nil); err != nil {
		t.Fatal(err)
	}
	ev := events(t, r, "t")
	// 1,000 input at $5, 200 output at $25 (then the user's $50), 10,000
	// cache reads at $0.50, 100 cache writes at $6.25, per million.
	for i, want := range map[int]float64{1: 0.015625, 3: 0.020625} {
		a := ev[i]
		if a.Type != event.TypeAnswer || math.Abs(a.Cost-want) > 1e-12 || a.Usage.CacheRead != 10000 || a.Model != "anthropic/claude-opus-5-5" || a.Provider != "anthropic" {
			t.Errorf("answer %d: %s cost %v usage %+v model %s/%s; want cost %v", i, a.Type, a.Cost, a.Usage, a.Provider, a.Model, want)
		}
	}
}

// The fallback answers when the first model is unavailable before it has
// said a word, and the answer names it; never after the first has started,
// nor for a failure another model would not mend.
func TestFallback(t *testing.T) {
	good := &scripted.Script{Rules: []scripted.Rule{{Match: "any", Text: "from the fallback"}}}
	down := &scripted.Script{Rules: []scripted.Rule{
		{Match: "overloaded", Status: 529},
		{Match: "unavailable", Status: 503},
		{Match: "started", Text: "half an answer", Chunks: 4, Status: 529, AfterChunks: 2},
		{Match: "broken", Status: 500},
		{Match: "limited", Status: 429, RetryAfter: 3},
	}}
	first, addr, err := scripted.Listen("127.0.0.1:0", down)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	s := withModel("anthropic/claude-opus-5-5", "")
	s.Model.Fallback = "openai/gpt-6-luna"
	r, fallback, _ := modelRunner(t, good, s, map[string]string{"LNK_MODEL_PROXY_ANTHROPIC": "http://" + addr.String()})
	ctx := context.Background()
	for _, tt := range []struct {
		text     string
		fallback bool
		says     string
	}{
		{"overloaded", true, ""},
		{"unavailable", true, ""},
		{"started", false, "Overloaded"},
		{"broken", false, "500"},
		{"limited", false, "retry after 3s"},
	} {
		before := len(fallback.Requests())
		var text strings.Builder
		a, err := r.Message(ctx, tt.text, Message{Text: tt.text}, func(s string) { text.WriteString(s) })
		asked := len(fallback.Requests()) > before
		if asked != tt.fallback {
			t.Errorf("%s: the fallback asked %v", tt.text, asked)
		}
		if !tt.fallback {
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s: error %v, want one saying %q", tt.text, err, tt.says)
			}
			lastIsMessage(t, r, tt.text, 1, tt.text)
			continue
		}
		if err != nil || a.Text != "from the fallback" || text.String() != a.Text {
			t.Fatalf("%s: %v, answer %q, streamed %q", tt.text, err, a.Text, text.String())
		}
		ev := events(t, r, tt.text)
		last := ev[len(ev)-1]
		if last.Model != "openai/gpt-6-luna" || last.Provider != "openai" || !strings.Contains(lastRequest(t, fallback), `"model":"gpt-6-luna"`) || last.Cost <= 0 {
			t.Errorf("%s: the answer names %s/%s, cost %v", tt.text, last.Provider, last.Model, last.Cost)
		}
	}
	// The fallback is sent its own instructions in the first's place, the
	// rest of the prompt the same.
	for name, text := range map[string]string{"anthropic/claude-opus-5-5": "OPUS-ONLY", "openai/gpt-6-luna": "LUNA-ONLY"} {
		p, _ := r.Agent.Path(home.ModelInstruction, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(text), 0o600)
	}
	if _, err := r.Message(ctx, "overloaded-2", Message{Text: "overloaded again"}, nil); err != nil {
		t.Fatal(err)
	}
	req := lastRequest(t, fallback)
	if !strings.Contains(req, "LUNA-ONLY") || strings.Contains(req, "OPUS-ONLY") || !strings.Contains(req, "You are an agent on Link") {
		t.Errorf("the fallback's request: %s", req)
	}
	if req := lastRequest(t, first); !strings.Contains(req, "OPUS-ONLY") || strings.Contains(req, "LUNA-ONLY") {
		t.Errorf("the first model's request: %s", req)
	}
}

// A stream cut off, a 500, a 429 and a stall each end the turn with a clear
// error, and lose nothing written: the message stays, no half answer.
func TestModelFailures(t *testing.T) {
	script := &scripted.Script{Rules: []scripted.Rule{
		{Match: "cut", Text: "a long answer cut short", Chunks: 5, Cut: true, AfterChunks: 2},
		{Match: "fail", Status: 500},
		{Match: "busy", Status: 429, RetryAfter: 3},
		{Match: "stall", Text: "an answer that stops", Chunks: 5, Stall: true, AfterChunks: 2},
	}}
	for _, tt := range modelCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _, _ := modelRunner(t, script, withModel(tt.name, tt.provider), map[string]string{"LNK_MODEL_STALL": "300ms"})
			for _, f := range []struct {
				text string
				is   error
				says string
			}{
				{"cut", model.ErrCut, "stream cut off"},
				{"fail", nil, "500"},
				{"busy", nil, "retry after 3s"},
				{"stall", model.ErrStalled, "no byte for 300ms"},
			} {
				// A failed turn leaves its message unanswered, so each
				// failure has a conversation of its own: the next message
				// would be sent with it.
				_, err := r.Message(context.Background(), f.text, Message{Text: f.text}, nil)
				if err == nil || (f.is != nil && !errors.Is(err, f.is)) || !strings.Contains(err.Error(), f.says) {
					t.Errorf("%s: %v, want %v saying %q", f.text, err, f.is, f.says)
				}
				lastIsMessage(t, r, f.text, 1, f.text)
			}
		})
	}
}
