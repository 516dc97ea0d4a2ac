package measure

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"lnk.dev/linkharness/measure/drive"
)

// Peers are the harnesses measured side by side with Link Harness, each as
// /work/shared/peers/README.md drives it against a local model server:
// its settings in its own HOME pointing at the scripted model, one command
// per message, and the interactive program for idle memory. Peer fills in
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

// PeerNames are the peers Peer knows, sorted.
func PeerNames() []string {
	var out []string
	for n := range peers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Peer returns the peer harness name (claude, codex, opencode or pi) with
// its programs found in bin (an npm install's node_modules/.bin), or on
// PATH when bin is empty, and its version as it prints it.
func Peer(ctx context.Context, name, bin string) (*Command, error) {
	p, ok := peers[name]
	if !ok {
		return nil, fmt.Errorf("%w: no peer %q (know %s)", ErrConfig, name, strings.Join(PeerNames(), ", "))
	}
	prog := p.First[0]
	var path string
	var err error
	if bin != "" {
		path = filepath.Join(bin, prog)
		if _, err = os.Stat(path); err == nil {
			path, err = filepath.Abs(path)
		}
	} else {
		path, err = exec.LookPath(prog)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: peer %s: %v", drive.ErrNoHarness, name, err)
	}
	c := p
	for _, argv := range []*[]string{&c.First, &c.Next, &c.Idle} {
		*argv = append([]string{path}, (*argv)[1:]...)
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, path, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: peer %s: %s --version: %v", drive.ErrNoHarness, name, path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	c.Version = strings.TrimSpace(lines[len(lines)-1])
	return &c, nil
}
