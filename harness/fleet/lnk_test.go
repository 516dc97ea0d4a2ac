package fleet

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// lnk builds cmd/lnk once per test binary, into a folder TestMain
// removes: the scripted model and the memory tool server a test runs as
// processes of their own, so what they hold is never counted as the
// agents'.
var lnk = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lnk-fleet-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "lnk")
	if out, err := exec.Command("go", "build", "-o", bin, "lnk.dev/linkharness/cmd/lnk").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build lnk: %v\n%s", err, out)
	}
	return bin, nil
})

// lnkAsked says whether a test asked for lnk, so TestMain removes what
// was built and builds nothing.
var lnkAsked atomic.Bool

func TestMain(m *testing.M) {
	code := m.Run()
	if lnkAsked.Load() {
		if bin, err := lnk(); err == nil {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

// startLnk runs lnk with args until the test ends, and returns what it
// printed after "listening on " on its first line.
func startLnk(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	lnkAsked.Store(true)
	bin, err := lnk()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	said, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("lnk %s printed %q: %v", args[0], line, err)
	}
	go io.Copy(io.Discard, out)
	return cmd, said
}
