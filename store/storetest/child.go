package storetest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// Child returns the command running this test binary again, only the test
// run (a whole name, anchored), with env added to this process's
// environment and its standard error this process's.
func Child(run string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// KillAtStop starts cmd, a writer that says what it does a line at a time
// on its standard output, hands each line to each, and kills the writer
// with SIGKILL at its first line starting "stopped", where it waits to be
// killed. It fails t, saying where, unless the writer stopped and died of
// that kill. The writer's standard input is held open until then: it ends
// if this process does, so a writer that reads it exits rather than
// outlive the test.
func KillAtStop(t testing.TB, cmd *exec.Cmd, where string, each func(line string)) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		l := sc.Text()
		each(l)
		if strings.HasPrefix(l, "stopped") && !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	cmd.Wait()
	if !stopped {
		t.Fatalf("%s: the writer ended (%v) without stopping there", where, cmd.ProcessState)
	}
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
		t.Fatalf("%s: the writer ended with %v, not killed", where, cmd.ProcessState)
	}
}
