package measure

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"lnk.dev/linkharness/loadgen/drive"
)

// makeHomes makes each agent's home (its conversation written ahead), key
// file and scratch folder.
func (r *caseRun) makeHomes() error {
	var events []byte
	if r.spec.Length > 0 {
		events = AppendConversation(nil, Thread, r.spec.Length, time.Now())
	}
	for _, sub := range []string{"agents", "keys", "run"} {
		if err := os.MkdirAll(filepath.Join(r.dir, sub), 0o700); err != nil {
			return fmt.Errorf("measure: %w", err)
		}
	}
	for i := range r.spec.Agents {
		name := fmt.Sprintf("agent-%d", i+1)
		a := drive.Agent{
			Name:    name,
			Home:    filepath.Join(r.dir, "agents", name),
			KeyFile: filepath.Join(r.dir, "keys", name+".key"),
			Scratch: filepath.Join(r.dir, "run", name),
			Model:   r.model.URL,
			Key:     newKey(),
		}
		for _, d := range []string{a.Home, a.Scratch} {
			if err := os.Mkdir(d, 0o700); err != nil {
				return fmt.Errorf("measure: %w", err)
			}
		}
		if err := os.WriteFile(a.KeyFile, []byte(a.Key+"\n"), 0o600); err != nil {
			return fmt.Errorf("measure: %w", err)
		}
		if events != nil {
			if err := writeConversation(a.Home, Thread, events); err != nil {
				return err
			}
		}
		r.agents = append(r.agents, a)
	}
	return nil
}

func newKey() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
