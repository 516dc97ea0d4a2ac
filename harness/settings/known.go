package settings

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownHarness comes from Harness for a name that is neither one
// KNOWN holds nor a program lnk-<name> that can be found.
var ErrUnknownHarness = errors.New("settings: unknown harness")

// HarnessProgram is what a harness name maps to: the plugin Link runs and
// the program that is it.
type HarnessProgram struct {
	Name    string `json:"harness"` // as `lnk agent use --harness` takes it
	Plugin  string `json:"plugin"`  // the plugin's name
	Program string `json:"program"` // the program's file name, found on PATH
	Known   bool   `json:"known"`   // whether KNOWN holds it (else an adapter from outside Link)
}

// known is KNOWN: the harness names Link ships, each with its plugin. Its
// program is the plugin's name after lnk-.
func known(name string) (plugin string, ok bool) {
	switch name {
	case "link":
		return "link-harness", true
	}
	return "", false
}

// KnownHarnesses returns the names KNOWN holds, in order.
func KnownHarnesses() []string { return []string{"link"} }

// Harness maps a harness name to its program: a name KNOWN holds to its
// plugin (link → link-harness → lnk-link-harness); any other plain name x
// to the adapter lnk-x, when found says that program is there. A name
// that is neither is refused with ErrUnknownHarness, saying the known ones.
func Harness(name string, found func(program string) bool) (HarnessProgram, error) {
	if plugin, ok := known(name); ok {
		return HarnessProgram{Name: name, Plugin: plugin, Program: "lnk-" + plugin, Known: true}, nil
	}
	if name != "" && plainName(name) && found("lnk-"+name) {
		return HarnessProgram{Name: name, Plugin: name, Program: "lnk-" + name}, nil
	}
	return HarnessProgram{}, fmt.Errorf("%w %q: the known harnesses are %s, and no program lnk-%s is on PATH",
		ErrUnknownHarness, name, strings.Join(KnownHarnesses(), ", "), name)
}

// plainName says whether name is letters, digits, '-', '_' and '.', and
// does not start with '.', so lnk-<name> is one file name.
func plainName(name string) bool {
	if name[0] == '.' || len(name) > 100 {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
