package profile

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/loadgen/proc"
)

// burn hashes until the process has spent cpu more CPU time, or 5 s pass.
func burn(t *testing.T, cpu time.Duration) {
	t.Helper()
	a, err := proc.Read(os.Getpid(), false)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 4096)
	for i := 0; time.Now().Before(deadline); i++ {
		sum := sha256.Sum256(buf)
		copy(buf, sum[:])
		if i%256 != 0 {
			continue
		}
		if b, err := proc.Read(os.Getpid(), false); err == nil && proc.CPUSeconds(a, b) > cpu.Seconds() {
			return
		}
	}
}

func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 2 {
		path := filepath.Join(dir, "cpu"+string(rune('0'+i))+".pprof")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			t.Skip("a CPU profile is already running:", err)
		}
		burn(t, 200*time.Millisecond)
		pprof.StopCPUProfile()
		f.Close()
		paths = append(paths, path)
	}
	empty := filepath.Join(dir, "empty.pprof")
	os.WriteFile(empty, nil, 0o600)
	paths = append(paths, empty, filepath.Join(dir, "missing.pprof"))

	// Ten, not five: the hash's frames, burn and the test share one
	// cumulative share, and which of equals comes first is not fixed.
	s, err := Summarize(paths, 10)
	if err != nil {
		t.Fatal(err)
	}
	if s.Samples < 20 {
		t.Errorf("%d samples of 0.4 s of CPU", s.Samples)
	}
	if s.Profiles != 2 {
		t.Errorf("%d profiles read, want 2", s.Profiles)
	}
	if s.Seconds < 0.2 || s.Seconds > 10 {
		t.Errorf("%.3f s sampled after burning 0.4 s", s.Seconds)
	}
	if len(s.Flat) == 0 || len(s.Flat) > 10 || len(s.Cum) == 0 || len(s.Cum) > 10 {
		t.Fatalf("flat %v cum %v: want 1 to 10 each", s.Flat, s.Cum)
	}
	if !strings.Contains(s.Largest, "sha256") {
		t.Errorf("largest %q, want the hash", s.Largest)
	}
	if s.Via != "lnk.dev/linkharness/loadgen/profile.burn" {
		t.Errorf("via %q, want the burning function", s.Via)
	}
	found := false
	for _, f := range s.Cum {
		if rootFrames[f.Name] {
			t.Errorf("root frame %s ranked", f.Name)
		}
		if f.Name == "lnk.dev/linkharness/loadgen/profile.burn" {
			found = true
			if f.Share < 0.25 {
				t.Errorf("burn's share %.2f, want a large one", f.Share)
			}
		}
	}
	if !found {
		t.Errorf("burn not in the cumulative top: %v", s.Cum)
	}
	for i := 1; i < len(s.Flat); i++ {
		if s.Flat[i].Seconds > s.Flat[i-1].Seconds {
			t.Errorf("flat not sorted: %v", s.Flat)
		}
	}

	if _, err := Summarize([]string{empty}, 5); err == nil {
		t.Error("no profile read, and no error")
	}
}
