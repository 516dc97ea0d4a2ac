package instructions

import (
	"slices"
	"testing"
)

// A memo builds again only when what it is given differs from the last.
func TestMemo(t *testing.T) {
	var m memo[[]string, string]
	builds := 0
	join := func(in []string) string {
		builds++
		out := ""
		for _, s := range in {
			out += s
		}
		return out
	}
	for i, tc := range []struct {
		in     []string
		want   string
		builds int
	}{
		{[]string{"a", "b"}, "ab", 1},
		{[]string{"a", "b"}, "ab", 1}, // the same: kept
		{[]string{"a", "c"}, "ac", 2},
		{[]string{"a", "b"}, "ab", 3}, // one value kept, the last
		{nil, "", 4},
		{[]string{}, "", 4}, // empty is empty
	} {
		if got := m.get(tc.in, slices.Equal, join); got != tc.want || builds != tc.builds {
			t.Errorf("%d: get(%q) = %q after %d builds; want %q after %d", i, tc.in, got, builds, tc.want, tc.builds)
		}
	}
}
