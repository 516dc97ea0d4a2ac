package proc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestReadSelf(t *testing.T) {
	a, err := Read(os.Getpid(), true)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until 30 ms of CPU (on a busy machine that takes longer than
	// 30 ms of wall time), and write, so the counters move.
	deadline := time.Now().Add(5 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		n++
		if n%10000 != 0 {
			continue
		}
		if s, err := Read(os.Getpid(), false); err == nil && s.CPUNanos > a.CPUNanos+30e6 {
			break
		}
	}
	f, err := os.Create(t.TempDir() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 1<<16)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := Read(os.Getpid(), true)
	if err != nil {
		t.Fatal(err)
	}
	if b.RSS == 0 || b.PSS == 0 || b.PSS > b.RSS {
		t.Errorf("rss %d pss %d: want 0 < pss <= rss", b.RSS, b.PSS)
	}
	if cpu := CPUSeconds(a, b); cpu < 0.03 || cpu > 5 {
		t.Errorf("cpu %.4f s over a spin of 30 ms of cpu: %+v then %+v", cpu, a, b)
	}
	if w := b.WChar - a.WChar; w < 1<<16 {
		t.Errorf("wchar grew %d, want at least %d", w, 1<<16)
	}
}

func TestReadChild(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep program:", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	s, err := Read(cmd.Process.Pid, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS == 0 || s.PSS == 0 {
		t.Errorf("sleep: rss %d pss %d", s.RSS, s.PSS)
	}
	// The child's clock counts its CPU as it runs, to the nanosecond. The
	// child spins, says so, and waits; sampled then it shows CPU spent.
	// Asked, it spins again and says so: the second sample shows more.
	spin := exec.Command("sh", "-c", `spin() { i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; }
spin; echo spun; read x; spin; echo spun; read x`)
	in, err := spin.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer spin.Wait()
	defer in.Close()
	said := bufio.NewScanner(out)
	spun := func() {
		t.Helper()
		if !said.Scan() || said.Text() != "spun" {
			t.Fatalf("the spinning child said %q, %v", said.Text(), said.Err())
		}
	}
	spun()
	a, err := Read(spin.Process.Pid, false)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "again\n")
	spun()
	b, err := Read(spin.Process.Pid, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.CPUNanos == 0 || b.CPUNanos <= a.CPUNanos {
		t.Errorf("cpu clock of a spinning child: %d then %d", a.CPUNanos, b.CPUNanos)
	}
	if _, err := Read(1<<30, false); err == nil {
		t.Error("a process that does not exist was sampled")
	}
}

func TestCPUSeconds(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b Sample
		want float64
	}{
		{"clock", Sample{CPUNanos: 1e9, CPUTicks: 100}, Sample{CPUNanos: 1.5e9, CPUTicks: 151}, 0.5},
		{"no clock", Sample{CPUTicks: 100}, Sample{CPUTicks: 130}, 0.3},
		{"clock went back", Sample{CPUNanos: 2e9, CPUTicks: 200}, Sample{CPUNanos: 1e9, CPUTicks: 300}, 0},
	} {
		if got := CPUSeconds(tt.a, tt.b); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
