package hometest

import (
	"os"
	"path/filepath"
	"testing"

	"lnk.dev/linkharness/harness/settings"
)

// Agent makes a home of its own in a temporary folder, holding the agent
// ada, whose folder dir it returns with a config.json of s, and the
// environment a runner of ada reads: LNK_HOME that home (no model facts of
// the user's unless a test writes them) and LNK_MODEL_PROXY proxy.
func Agent(tb testing.TB, s settings.Settings, proxy string) (dir string, env map[string]string) {
	tb.Helper()
	root := tb.TempDir()
	dir = filepath.Join(root, "agents", "ada")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := settings.Write(filepath.Join(dir, "config.json"), s); err != nil {
		tb.Fatal(err)
	}
	return dir, map[string]string{"LNK_MODEL_PROXY": proxy, "LNK_HOME": root}
}
