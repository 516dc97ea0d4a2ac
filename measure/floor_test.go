package measure

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
	if want := "link, an agent alone: 3.00× the floor's CPU per message"; !strings.Contains(b.String(), want) {
		t.Errorf("the table has no %q:\n%s", want, b.String())
	}
}
