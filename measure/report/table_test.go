package report

import (
	"strings"
	"testing"
)

// With the floor measured as a peer, the table tells Link Harness's CPU
// per message as a ratio to the floor's.
func TestTableFloorRatio(t *testing.T) {
	r := &Result{Harness: "link"}
	var alone Case
	alone.Median.PerMessage.CPU = 0.0012
	r.Cases = []Case{alone}
	var floor Case
	floor.Median.PerMessage.CPU = 0.0004
	r.Peers = []PeerResult{{Harness: "floor", Messages: 200, Case: floor}}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "link alone") {
			row = l
		}
	}
	if !strings.Contains(row, "1.20 ms  3.00×") {
		t.Errorf("the row of Link Harness alone does not say 3.00× the floor: %q in\n%s", row, b.String())
	}
}

// A peer not run is a row saying so, and a line saying why, never a
// figure of nothing.
func TestTableNotRun(t *testing.T) {
	r := &Result{Harness: "link", Peers: []PeerResult{{Harness: "claude", NotRun: "no claude in /x; " + strings.Repeat("install it so ", 20)}}}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "claude: not run: no claude in /x;") || strings.Contains(out, "0 B") {
		t.Errorf("table:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > Width {
			t.Errorf("a line of %d columns: %q", len([]rune(l)), l)
		}
	}
}
