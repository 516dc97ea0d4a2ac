package drive

import (
	"strings"
	"testing"
	"time"
)

func TestParseListening(t *testing.T) {
	for _, c := range []struct {
		line        string
		named       bool
		name, addr  string
		errContains string
	}{
		{"listening on 127.0.0.1:4000\n", false, "", "127.0.0.1:4000", ""},
		{"listening on 127.0.0.1:4000 for agent-2\n", true, "agent-2", "127.0.0.1:4000", ""},
		{"listening on [::1]:80 for a", true, "a", "[::1]:80", ""},
		{"listening on 127.0.0.1:4000\n", true, "", "", "for NAME"},
		{"listening on 10.0.0.1:4000", false, "", "", "not on loopback"},
		{"hello", false, "", "", "want"},
	} {
		name, addr, err := parseListening(c.line, c.named)
		if c.errContains != "" {
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%q: err %v, want one saying %q", c.line, err, c.errContains)
			}
			continue
		}
		if err != nil || name != c.name || addr != c.addr {
			t.Errorf("%q: %q %q %v, want %q %q", c.line, name, addr, err, c.name, c.addr)
		}
	}
}

func TestAgentsFile(t *testing.T) {
	agents := []Agent{{Name: "agent-1", Home: "/h/a\"b", KeyFile: "/k/1"}, {Name: "agent-2", Home: "/h/2", KeyFile: "/k/2"}}
	got := string(agentsFile(agents, 0, 0))
	want := "[[agent]]\nname = \"agent-1\"\nhome = \"/h/a\\\"b\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"/k/1\"\n\n" +
		"[[agent]]\nname = \"agent-2\"\nhome = \"/h/2\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"/k/2\"\n\n"
	if got != want {
		t.Errorf("agents file:\n%s\nwant:\n%s", got, want)
	}
	// Agents that sleep: the file says when, before the agents.
	got = string(agentsFile(agents[:1], 90*time.Second, 0))
	want = "[serve]\nsleep_after = \"1m30s\"\n\n[[agent]]\nname = \"agent-1\"\nhome = \"/h/a\\\"b\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"/k/1\"\n\n"
	if got != want {
		t.Errorf("agents file that sleeps:\n%s\nwant:\n%s", got, want)
	}
}

func TestHarnessEnv(t *testing.T) {
	got := HarnessEnv([]string{"PATH=/bin", "LNK_TOOL_X=http://a", "LNK_MODEL_PROXY_OPENAI=http://b", "HOME=/h"}, "http://127.0.0.1:9")
	want := "PATH=/bin HOME=/h LNK_MODEL_PROXY=http://127.0.0.1:9"
	if strings.Join(got, " ") != want {
		t.Errorf("env %q, want %q", got, want)
	}
}
