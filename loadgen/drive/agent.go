package drive

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// NewAgents makes n agents, agent-1 to agent-n, each as NewAgent does.
func NewAgents(dir string, n int, model string) ([]Agent, error) {
	out := make([]Agent, 0, n)
	for i := range n {
		a, err := NewAgent(dir, fmt.Sprintf("agent-%d", i+1), model)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// NewAgent makes the agent name under dir, to use the model proxy at
// model: its home dir/agents/NAME (empty), its scratch folder dir/run/NAME,
// and a new random key in dir/keys/NAME.key, which only its owner may
// read.
func NewAgent(dir, name, model string) (Agent, error) {
	var key [24]byte
	rand.Read(key[:])
	a := Agent{
		Name:    name,
		Home:    filepath.Join(dir, "agents", name),
		KeyFile: filepath.Join(dir, "keys", name+".key"),
		Scratch: filepath.Join(dir, "run", name),
		Model:   model,
		Key:     hex.EncodeToString(key[:]),
	}
	for _, d := range []string{a.Home, a.Scratch, filepath.Dir(a.KeyFile)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Agent{}, fmt.Errorf("drive: agent %s: %w", name, err)
		}
	}
	if err := os.WriteFile(a.KeyFile, []byte(a.Key+"\n"), 0o600); err != nil {
		return Agent{}, fmt.Errorf("drive: agent %s: %w", name, err)
	}
	return a, nil
}
