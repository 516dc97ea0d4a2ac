package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// programs are Link Harness's programs, lnk among them.
var programs = []string{"lnk", "lnk-link-harness", "lnk-sqlite", "lnk-pebble", "lnk-postgres", "lnk-gcs"}

// allBin is the folder buildAll builds into, made and removed by TestMain.
var allBin string

// buildAll builds every program once per test binary, into allBin.
var buildAll = sync.OnceValues(func() (string, error) {
	dir := allBin
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, p := range programs {
		args = append(args, "lnk.dev/linkharness/cmd/"+p)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
})

// TestHelp asks every command and subcommand for --help: each prints its
// usage on standard output, nothing on standard error, and exits 0.
func TestHelp(t *testing.T) {
	bin, err := buildAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		want string // in the usage
	}{
		{"lnk --help", "lnk agent chat list"},
		{"lnk help", "lnk model show NAME"},
		{"lnk agent --help", "--agent NAME"},
		{"lnk agent configure --help", "-spec"},
		{"lnk agent use --help", "-harness"},
		{"lnk agent chat fork --help", "-before"},
		{"lnk agent chat --help", "lnk agent chat show THREAD"},
		{"lnk agent chat list --help", "-home"},
		{"lnk agent chat show --help", "-agent"},
		{"lnk agent chat convert --help", "-to"},
		{"lnk agent chat repair --help", "lnk agent chat repair THREAD"},
		{"lnk model --help", "lnk model show NAME"},
		{"lnk model show --help", "LNK_MODEL_PROXY"},
		{"lnk measure --help", "-agents"},
		{"lnk loadgen --help", "-conversations"},
		{"lnk scripted-model --help", "-script"},
		{"lnk tool-server --help", "memory|file"},
		{"lnk tool-server memory --help", "-home"},
		{"lnk store-bridge --help", "-driver"},
		{"lnk-link-harness --help", "LNK_MODEL_PROXY"},
		{"lnk-link-harness serve --help", "-key-file"},
		{"lnk-sqlite --help", "-home"},
		{"lnk-pebble --help", "-home"},
		{"lnk-postgres --help", "-home"},
		{"lnk-gcs --help", "-home"},
		{"lnk-gcs -h", "-home"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			args := strings.Fields(tc.cmd)
			cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v; stderr %q", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), "usage") || !strings.Contains(stdout.String(), tc.want) {
				t.Errorf("printed %q, want usage naming %s", stdout.String(), tc.want)
			}
			if stderr.Len() != 0 {
				t.Errorf("said on standard error %q", stderr.String())
			}
		})
	}
}

// A mistake is not help: it says what is wrong on standard error, and
// exits 2 or 1.
func TestNotHelp(t *testing.T) {
	bin, err := buildAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"lnk", "lnk nosuch", "lnk agent", "lnk agent chat nosuch", "lnk agent chat list --nosuch", "lnk-link-harness", "lnk-link-harness serve --nosuch", "lnk-sqlite --nosuch"} {
		args := strings.Fields(c)
		cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || stderr.Len() == 0 {
			t.Errorf("%s: %v, said %q", c, err, stderr.String())
		}
	}
}

// TestHelpGolden holds what lnk says of itself, byte for byte, in
// testdata/help.golden: its usage, each group's and each command's
// --help, and its usage after a mistake. go test -update rewrites it.
func TestHelpGolden(t *testing.T) {
	bin, err := buildAll()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, c := range []string{
		"-h", "help", "", "nosuch",
		"agent -h", "agent", "agent use -h", "agent configure -h",
		"agent chat -h", "agent chat list -h", "agent chat show -h", "agent chat convert -h", "agent chat repair -h", "agent chat fork -h",
		"agent chat list --nosuch",
		"model -h", "model show -h", "model show --nosuch",
		"measure -h", "loadgen -h", "scripted-model -h", "tool-server -h", "tool-server", "tool-server memory -h", "store-bridge -h", "store-bridge x",
	} {
		cmd := exec.Command(filepath.Join(bin, "lnk"), strings.Fields(c)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); cmd.ProcessState == nil {
			t.Fatalf("lnk %s: %v", c, err)
		}
		fmt.Fprintf(&got, "$ lnk %s\n%s", c, stdout.Bytes())
		if stderr.Len() > 0 {
			fmt.Fprintf(&got, "(stderr)\n%s", stderr.Bytes())
		}
		fmt.Fprintf(&got, "(exit %d)\n\n", cmd.ProcessState.ExitCode())
	}
	golden(t, "help.golden", got.Bytes())
}
