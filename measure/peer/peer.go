package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Peers are the harnesses measured side by side with Link Harness
// (BENCHMARKS.md, "Peers", says how to install them), each driven against
// a local model server: its settings in its own HOME pointing at the
// scripted model, one command per message, and the interactive program for
// idle memory. Find fills in
// where their programs are.
var peers = map[string]Command{
	"claude": {
		Label: "claude",
		First: []string{"claude", "-p", "{text}"},
		Next:  []string{"claude", "-p", "--continue", "{text}"},
		Idle:  []string{"claude"},
		Env: []string{"ANTHROPIC_BASE_URL=http://{model}", "ANTHROPIC_API_KEY=dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"},
		Files: map[string]string{".claude.json": `{
  "hasCompletedOnboarding": true,
  "theme": "dark",
  "autoUpdates": false,
  "customApiKeyResponses": { "approved": ["dummy"], "rejected": [] },
  "projects": { "WORKSPACE": { "hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": [] } }
}
`},
	},
	"codex": {
		Label: "codex",
		First: []string{"codex", "exec", "--skip-git-repo-check", "{text}"},
		Next:  []string{"codex", "exec", "--skip-git-repo-check", "resume", "--last", "{text}"},
		Idle:  []string{"codex"},
		Env:   []string{"FAKE_API_KEY=dummy"},
		Files: map[string]string{".codex/config.toml": `model_provider = "fake"
check_for_update_on_startup = false
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.fake]
name = "fake"
base_url = "http://MODEL_ADDR/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
log_user_prompt = false

[projects."WORKSPACE"]
trust_level = "trusted"
`},
	},
	"opencode": {
		Label: "opencode",
		First: []string{"opencode", "run", "{text}"},
		Next:  []string{"opencode", "run", "--continue", "{text}"},
		Idle:  []string{"opencode"},
		Env:   []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1"},
		Files: map[string]string{".config/opencode/opencode.json": `{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "fake/fake-model",
  "small_model": "fake/fake-model",
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake",
      "options": { "baseURL": "http://MODEL_ADDR/v1", "apiKey": "dummy" },
      "models": { "fake-model": { "name": "Fake model", "limit": { "context": 200000, "output": 32000 } } }
    }
  }
}
`},
	},
	"crush": {
		Label: "crush",
		First: []string{"crush", "run", "-q", "{text}"},
		Next:  []string{"crush", "run", "-q", "--continue", "{text}"},
		Idle:  []string{"crush"},
		Env:   []string{"CRUSH_DISABLE_METRICS=1", "DO_NOT_TRACK=1", "CRUSH_DISABLE_PROVIDER_AUTO_UPDATE=1"},
		Files: map[string]string{".config/crush/crush.json": `{
  "providers": {
    "fake": {
      "type": "openai-compat",
      "base_url": "http://MODEL_ADDR/v1",
      "api_key": "dummy",
      "models": [
        { "id": "fake-model", "name": "Fake model", "context_window": 200000, "default_max_tokens": 4096 }
      ]
    }
  },
  "models": {
    "large": { "model": "fake-model", "provider": "fake" },
    "small": { "model": "fake-model", "provider": "fake" }
  },
  "options": { "disable_provider_auto_update": true, "disable_metrics": true }
}
`},
	},
	"pi": {
		Label: "pi",
		First: []string{"pi", "-p", "{text}"},
		Next:  []string{"pi", "-p", "--continue", "{text}"},
		Idle:  []string{"pi"},
		Env:   []string{"PI_OFFLINE=1", "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1"},
		Files: map[string]string{
			".pi/agent/models.json": `{
  "providers": {
    "fake": {
      "baseUrl": "http://MODEL_ADDR/v1",
      "api": "openai-completions",
      "apiKey": "dummy",
      "compat": { "supportsDeveloperRole": false, "supportsReasoningEffort": false },
      "models": [
        { "id": "fake-model", "name": "Fake model", "reasoning": false, "input": ["text"],
          "contextWindow": 200000, "maxTokens": 32000,
          "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0 } }
      ]
    }
  }
}
`,
			".pi/agent/settings.json": `{ "defaultProvider": "fake", "defaultModel": "fake-model", "enableInstallTelemetry": false }
`,
		},
	},
}

// getPeer says how to get each peer's program: an npm package (with the
// script npm 11 does not run unless approved), or a Go module measure can
// build itself.
var getPeer = map[string]struct {
	npm, script, module string
}{
	"claude":   {npm: "@anthropic-ai/claude-code@2.1.197", script: "(cd node_modules/@anthropic-ai/claude-code && node install.cjs)"},
	"codex":    {npm: "@openai/codex@0.171.0"},
	"opencode": {npm: "opencode-ai@1.18.33", script: "(cd node_modules/opencode-ai && node postinstall.mjs)"},
	"pi":       {npm: "@mariozechner/pi-coding-agent@0.73.1"},
	"crush":    {module: "github.com/charmbracelet/crush@latest"},
}

// ErrMissing comes from Find when a peer's program is not here and
// cannot be had; the error says what is missing and how to get it. The
// run goes on without that peer, told as not run.
var ErrMissing = errors.New("measure: peer missing")

// ErrConfig comes from Find for a peer it does not know, from
// Command.Start for a Command without a message's command, and from
// BuildFloor when the floor cannot be built here: what `lnk measure` was
// asked for cannot be done. The error says what.
var ErrConfig = errors.New("measure: bad config")

// Names are the peers Find knows, sorted.
func Names() []string {
	var out []string
	for n := range peers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Find returns the peer harness name (one of Names) with its programs
// found in bin (an npm install's node_modules/.bin), or on PATH when bin
// is empty, and its version as it prints it. A peer built from a Go module
// (crush) and found nowhere is built into dir, when the go command can.
// Whatever is missing is found before anything runs: an error wrapping
// ErrMissing says what and how to get it.
func Find(ctx context.Context, name, bin, dir string) (*Command, error) {
	p, ok := peers[name]
	if !ok {
		return nil, fmt.Errorf("%w: no peer %q (know %s)", ErrConfig, name, strings.Join(Names(), ", "))
	}
	get := getPeer[name]
	how := func() string {
		if get.module != "" {
			return fmt.Sprintf("build it with `GOBIN=DIR go install %s` (it needs the Go module proxy) and give --peer-bin DIR", get.module)
		}
		s := "mkdir -p /work/peers && cd /work/peers && npm install --no-audit --no-fund " + get.npm
		if get.script != "" {
			s += " && " + get.script
		}
		return "install it: `" + s + "`, then give --peer-bin /work/peers/node_modules/.bin"
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("%w: %s: no git on PATH, which makes each agent's workspace; install git", ErrMissing, name)
	}
	if get.npm != "" {
		if _, err := exec.LookPath("node"); err != nil {
			return nil, fmt.Errorf("%w: %s: no node on PATH (Node.js 20 or later runs it); install Node.js, then %s", ErrMissing, name, how())
		}
	}
	prog := p.First[0]
	path, err := findProgram(prog, bin)
	if err != nil && get.module != "" && dir != "" {
		path, err = buildPeer(ctx, prog, get.module, dir)
	}
	if err != nil {
		where := "on PATH"
		if bin != "" {
			where = "in " + bin
		}
		return nil, fmt.Errorf("%w: %s: no %s %s (%v); %s", ErrMissing, name, prog, where, err, how())
	}
	c := p
	for _, argv := range []*[]string{&c.First, &c.Next, &c.Idle} {
		*argv = append([]string{path}, (*argv)[1:]...)
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, path, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: `%s --version` fails (%v: %s); %s", ErrMissing, name, path, err, tail(out, 200), how())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	c.Version = strings.TrimSpace(lines[len(lines)-1])
	return &c, nil
}

// findProgram returns prog's absolute path in bin, or on PATH when bin is
// empty.
func findProgram(prog, bin string) (string, error) {
	if bin == "" {
		return exec.LookPath(prog)
	}
	path := filepath.Join(bin, prog)
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// buildPeer builds a peer's Go module into dir with the go command.
func buildPeer(ctx context.Context, prog, module, dir string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("not found, and no go command to build %s", module)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "install", module)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("not found, and `go install %s` failed: %v: %s", module, err, tail(out, 300))
	}
	return filepath.Join(dir, prog), nil
}
