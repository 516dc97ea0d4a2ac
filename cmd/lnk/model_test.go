package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"lnk.dev/linkharness/loadgen/scripted"
)

// showFlags is lnk model show's flag set, as lnk makes it.
func showFlags() *flag.FlagSet {
	c, _ := find(commands(), "model show")
	return c.flags(nil).FlagSet
}

// show runs `lnk model show name` with env and returns each field's line
// by its field.
func show(t *testing.T, name string, env map[string]string) (map[string]string, string) {
	t.Helper()
	var out bytes.Buffer
	if err := modelShow(&out, showFlags(), []string{name}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(line, "  ") {
			fields[f[0]] = strings.Join(f[1:], " ")
		}
	}
	return fields, out.String()
}

// Each field is printed with its source; a user's file overriding one
// field keeps the others from Link's.
func TestModelShow(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"LNK_HOME": home}
	fields, out := show(t, "anthropic/claude-opus-5-5", env)
	for field, want := range map[string]string{
		"provider": "anthropic link", "window": "1,000,000 tokens link", "answer": "128,000 tokens link",
		"input": "$5 per million tokens link", "output": "$25 per million tokens link",
		"cache_read": "$0.5 per million tokens link", "cache_write": "$6.25 per million tokens link",
	} {
		if fields[field] != want {
			t.Errorf("%s: %q, want %q in\n%s", field, fields[field], want, out)
		}
	}
	os.WriteFile(filepath.Join(home, "model-facts.toml"), []byte("[models.\"anthropic/claude-opus-5-5\"]\noutput = 30.0\n"), 0o600)
	fields, out = show(t, "anthropic/claude-opus-5-5", env)
	if fields["output"] != "$30 per million tokens user file" || fields["input"] != "$5 per million tokens link" ||
		fields["window"] != "1,000,000 tokens link" || !strings.Contains(out, filepath.Join(home, "model-facts.toml")) {
		t.Errorf("the user's file over Link's:\n%s", out)
	}

	// Ollama's model: the runtime says it runs it with 8,192 of the 40,960
	// it was trained for.
	srv, addr, err := scripted.Listen("127.0.0.1:0", &scripted.Script{Models: []scripted.Model{{Name: "qwen3:8b", ContextLength: 40960, NumCtx: 8192}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env["LNK_MODEL_PROXY"] = "http://" + addr.String()
	fields, out = show(t, "ollama/qwen3:8b", env)
	if !regexp.MustCompile(`^8,192 tokens runtime \(ollama runs it with 8,192 tokens; trained for 40,960 tokens\)$`).MatchString(fields["window"]) ||
		fields["answer"] != "8,192 tokens link" || fields["provider"] != "ollama link" || fields["input"] != "$0 per million tokens link" {
		t.Errorf("ollama/qwen3:8b:\n%s", out)
	}
	// Not on the runtime: Link's, and why the runtime said nothing.
	fields, out = show(t, "ollama/gpt-oss:20b", env)
	if fields["window"] != "131,072 tokens link" || !strings.Contains(out, "runtime: not reached: model: ollama: 404") {
		t.Errorf("ollama/gpt-oss:20b:\n%s", out)
	}
	// Nobody's: the spec's defaults, no prices.
	fields, out = show(t, "acme/new-model", env)
	if fields["window"] != "32,768 tokens spec default ([window] unknown: nobody described the model)" ||
		fields["answer"] != "4,096 tokens spec default ([window] answer: 0.125 of the window)" || fields["input"] != "unknown nobody described it" {
		t.Errorf("acme/new-model:\n%s", out)
	}
}

func TestModelShowBad(t *testing.T) {
	home := t.TempDir()
	env := func(k string) string { return map[string]string{"LNK_HOME": home}[k] }
	var out bytes.Buffer
	if err := modelShow(&out, showFlags(), []string{"claude"}, env); err == nil || !strings.Contains(err.Error(), "maker/model") {
		t.Errorf("a name without a maker: %v", err)
	}
	if err := modelShow(&out, showFlags(), nil, env); err == nil {
		t.Error("no name")
	}
	os.WriteFile(filepath.Join(home, "model-facts.toml"), []byte("[models.\"a/b\"]\nwindw = 1\n"), 0o600)
	if err := modelShow(&out, showFlags(), []string{"a/b"}, env); err == nil || !strings.Contains(err.Error(), "model-facts.toml:2: unknown key") {
		t.Errorf("a bad user file: %v", err)
	}
}
