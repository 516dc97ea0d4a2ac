package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/store/postgres/pgtest"
)

// build builds the programs the test runs, once per test binary.
var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lnk-e2e-bin-")
	if err != nil {
		return "", err
	}
	for _, p := range []string{"lnk", "lnk-link-harness"} {
		if err := goBuild(dir, p); err != nil {
			return "", err
		}
	}
	return dir, nil
})

// goBuild builds the program p of this module's cmd/ into dir.
func goBuild(dir, p string) error {
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, p), "lnk.dev/linkharness/cmd/"+p)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", p, err, out)
	}
	return nil
}

// buildBeside builds the program p beside the programs build makes, where
// lnk-link-harness and lnk store-bridge find a driver's plugin.
func buildBeside(p string) error {
	bin, err := build()
	if err != nil {
		return err
	}
	return goBuild(bin, p)
}

// buildSQLite and buildPostgres build the SQLite and PostgreSQL plugins
// beside the programs, once per test binary.
var (
	buildSQLite   = sync.OnceValue(func() error { return buildBeside("lnk-sqlite") })
	buildPostgres = sync.OnceValue(func() error { return buildBeside("lnk-postgres") })
)

// keptBy readies the conversations' kind for the harness: the plugin of
// sqlite or postgres built beside it, and for postgres a schema of the
// test's own; log and compact need nothing.
func keptBy(t *testing.T, kind string) {
	t.Helper()
	switch kind {
	case "sqlite":
		if err := buildSQLite(); err != nil {
			t.Fatal(err)
		}
	case "postgres":
		pgtest.SchemaEnv(t)
		if err := buildPostgres(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := build(); err == nil && strings.Contains(dir, "lnk-e2e-bin-") {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// lines hands over a program's output a line at a time.
type lines chan string

func readLines(r io.Reader) lines {
	c := make(lines, 1<<16) // room for every line a test reads later: a full pipe would stall the program
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}

// wait reads lines until one holds every one of want, and returns it.
func (c lines) wait(t *testing.T, what string, want ...string) string {
	t.Helper()
	hang := time.After(2 * time.Minute) // a bound on a hang, never a pass
	for {
		select {
		case l, ok := <-c:
			if !ok {
				t.Fatalf("waiting for %s: the output ended", what)
			}
			all := true
			for _, w := range want {
				all = all && strings.Contains(l, w)
			}
			if all {
				return l
			}
		case <-hang:
			t.Fatalf("waiting for %s: no such line", what)
		}
	}
}

// listening reads the next listening line of a process serving an
// agents file, and returns the agent it names and its base URL.
func (c lines) listening(t *testing.T) (name, base string) {
	t.Helper()
	l := c.wait(t, "a listening line", "listening on ")
	name, base, err := fleettest.Listening(l)
	if err != nil || name == "" {
		t.Fatalf("printed %q: %v", l, err)
	}
	return name, base
}

// addresses reads the next n listening lines of a process serving an
// agents file, and returns each agent's base URL by its name.
func (c lines) addresses(t *testing.T, n int) map[string]string {
	t.Helper()
	addrs := make(map[string]string, n)
	for range n {
		name, base := c.listening(t)
		addrs[name] = base
	}
	return addrs
}

// terminate stops the program cmd runs as a person would, with SIGTERM,
// and returns how it ended.
func terminate(cmd *exec.Cmd) error {
	cmd.Process.Signal(syscall.SIGTERM)
	return cmd.Wait()
}

// startOut starts cmd, its standard output read a line at a time; it is
// killed at the test's end if it is still running, with its process
// group when it has one of its own.
func startOut(t *testing.T, cmd *exec.Cmd) lines {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			} else {
				cmd.Process.Kill()
			}
			cmd.Wait()
		}
	})
	return readLines(stdout)
}

// command is the program name, built by build, with args, in this
// process's environment and env.
func command(t *testing.T, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// start starts a program and returns it with the address it printed.
func start(t *testing.T, env []string, name string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return startLogged(t, env, os.Stderr, name, args...)
}

// startLogged is start with the program's standard error to stderr.
func startLogged(t *testing.T, env []string, stderr io.Writer, name string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := command(t, env, name, args...)
	cmd.Stderr = stderr
	return cmd, address(t, name, startOut(t, cmd))
}

// address reads the first line the program name printed, "listening on
// ADDR", and returns ADDR.
func address(t *testing.T, name string, out lines) string {
	t.Helper()
	line, ok := <-out
	if !ok {
		t.Fatalf("%s printed no address", name)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("%s printed %q", name, line)
	}
	return addr
}

// startModel starts the scripted model, with more flags of lnk
// scripted-model, and returns its address.
func startModel(t *testing.T, args ...string) string {
	t.Helper()
	_, addr := start(t, nil, "lnk", append([]string{"scripted-model", "--listen", "127.0.0.1:0"}, args...)...)
	return addr
}

// startWatched starts lnk-link-harness with args and env added to this
// process's environment, its output and log read a line at a time; it is
// killed at the test's end if it is still running.
func startWatched(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, out, log lines) {
	t.Helper()
	cmd = command(t, env, "lnk-link-harness", args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	out = startOut(t, cmd)
	return cmd, out, readLines(stderr)
}

// writeAgents writes the agents file path: head, then the entry of each
// of names, each with a home and a key file beside the file
// (fleettest.Agent).
func writeAgents(t *testing.T, path, head string, names ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(head)
	for _, name := range names {
		b.WriteString(fleettest.Agent(t, filepath.Dir(path), name))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// adaHome makes the agent ada's home in dir, its config.json config when
// that is not "", and beside it a key file holding key on a line; it
// returns the home and the key file.
func adaHome(t *testing.T, dir, config, key string) (home, keyFile string) {
	t.Helper()
	home, keyFile = filepath.Join(dir, "ada"), filepath.Join(dir, "key")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, keyFile
}

// agentNames is a0, a1, … a(n-1).
func agentNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("a%d", i)
	}
	return names
}

// oneShot sends each request on a connection of its own, closed after
// its answer: an agent going to sleep, or a blank unit ending, closes its
// idle connections, and a POST on a connection closed under it is not
// sent again.
var oneShot = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// relay is a proxy to the model at modelURL passing streamed answers on as
// they come, on a transport of its own: http.DefaultTransport is shared by
// every test here (an httptest server closing closes its idle
// connections), so a relay depends on no other test.
func relay(t *testing.T, modelURL string) *httputil.ReverseProxy {
	t.Helper()
	u, err := url.Parse(modelURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	proxy.Transport = tr
	proxy.FlushInterval = -1
	return proxy
}

// residentKiB is the resident memory of the process pid, in KiB; the test
// is skipped where there is no /proc to read it from.
func residentKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read the resident memory: %v", err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	kib, _ := strconv.Atoi(string(m[1]))
	return kib
}
