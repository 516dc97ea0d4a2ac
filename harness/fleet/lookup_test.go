package fleet

import "testing"

func TestLookup(t *testing.T) {
	env := []string{"A=1", "AB=2", "B=", "C=x=y", "A=3", "NOEQUALS", "=empty"}
	for _, c := range []struct{ name, want string }{
		{"A", "3"},       // the last setting counts
		{"AB", "2"},      // not A's
		{"B", ""},        // set, empty
		{"C", "x=y"},     // the first = ends the name
		{"D", ""},        // unset
		{"NOEQUALS", ""}, // no value at all
		{"", ""},
	} {
		if got := Lookup(env)(c.name); got != c.want {
			t.Errorf("lookup(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
