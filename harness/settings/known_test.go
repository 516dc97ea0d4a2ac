package settings

import (
	"errors"
	"strings"
	"testing"
)

// KNOWN maps link to its plugin and program; another name is an adapter
// lnk-<name> when found, and refused, with the known names, when not.
func TestHarness(t *testing.T) {
	onPath := map[string]bool{"lnk-claude": true}
	found := func(p string) bool { return onPath[p] }
	for _, c := range []struct {
		name    string
		want    HarnessProgram
		refused bool
	}{
		{name: "link", want: HarnessProgram{"link", "link-harness", "lnk-link-harness", true}},
		{name: "claude", want: HarnessProgram{"claude", "claude", "lnk-claude", false}},
		{name: "codex", refused: true},
		{name: "", refused: true},
		{name: "../x", refused: true},
		{name: ".hidden", refused: true},
		{name: "link-harness", refused: true},
	} {
		got, err := Harness(c.name, found)
		if c.refused {
			if !errors.Is(err, ErrUnknownHarness) || !strings.Contains(err.Error(), "known harnesses are link") {
				t.Errorf("%q: %+v, %v; want refused saying the known ones", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}
