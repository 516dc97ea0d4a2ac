package turn

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
)

// defaultMost is a section's most in bytes when the spec sets none.
const defaultMost = 64 << 10

// sections reads the prompt's sections in their order. A turn composes
// Link's base, the model's own instructions and the standing instructions
// (read at each turn, a file like any other); a section the spec sets to
// "none" is left out.
func (t *turn) sections(s settings.Settings) ([]prompt.Section, error) {
	modelFile, err := t.r.Agent.Path(home.ModelInstruction, s.Model.Name)
	if err != nil {
		modelFile = "" // a model name that is no folder has no file
	}
	instruction, err := t.r.Agent.Path(home.Instruction, "")
	if err != nil {
		return nil, err
	}
	var out []prompt.Section
	for _, sec := range []struct {
		name, text, file string
	}{
		{name: "base", text: prompt.Base},
		{name: "model", file: modelFile},
		{name: "instruction", file: instruction},
	} {
		text, err := t.section(s, sec.name, sec.text, sec.file)
		if err != nil {
			return nil, fmt.Errorf("instructions, section %s: %w", sec.name, err)
		}
		out = append(out, prompt.Section{Name: sec.name, Text: text})
	}
	return out, nil
}

// section is one section's text: Link's own text or file, unless the spec
// names another source or none.
func (t *turn) section(s settings.Settings, name, text, file string) (string, error) {
	most := defaultMost
	if sec, ok := s.Instructions[name]; ok {
		if sec.Most > 0 {
			most = sec.Most
		}
		switch {
		case sec.Source == "none":
			return "", nil
		case strings.Contains(sec.Source, "://"):
			return "", fmt.Errorf("a link (%s) is not read by this version; name a file in the agent's home", sec.Source)
		case sec.Source != "":
			text, file = "", sec.Source
		}
	}
	if file == "" {
		if len(text) > most {
			return text[:most], nil
		}
		return text, nil
	}
	b, err := t.r.Agent.ReadFile(file, most)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	t.read += int64(len(b))
	return string(b), err
}
