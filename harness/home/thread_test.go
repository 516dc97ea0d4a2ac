package home_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/storetest"
)

// Ten thousand names, in other scripts, with punctuation, differing only
// in case or in a character outside [A-Za-z0-9._-], each have a folder of
// their own, on a case-sensitive disk and on one that folds case: ASCII,
// within the length a folder's name may have, one IsThreadDir knows, none
// a store's, and the name itself where it is plain.
func TestThreadDirsNeverMeet(t *testing.T) {
	seed := storetest.Seed(t)
	names := hometest.ThreadNames(rand.New(rand.NewPCG(seed, seed)), 10000)
	folded := make(map[string]string, len(names))
	for _, name := range names {
		dir, err := home.ThreadDir(name)
		if err != nil {
			t.Fatalf("ThreadDir(%q): %v", name, err)
		}
		if len(dir) > home.MaxDirBytes || home.MaxDirBytes > 255 {
			t.Errorf("ThreadDir(%q) = %q, of %d bytes, over %d", name, dir, len(dir), home.MaxDirBytes)
		}
		for i := 0; i < len(dir); i++ {
			if dir[i] >= utf8.RuneSelf || dir[i] < 0x20 {
				t.Fatalf("ThreadDir(%q) = %q, not printable ASCII", name, dir)
			}
		}
		if !home.IsThreadDir(dir) || store.Reserved(dir) || strings.HasSuffix(dir, "~convert") {
			t.Errorf("ThreadDir(%q) = %q: IsThreadDir %v, reserved %v", name, dir, home.IsThreadDir(dir), store.Reserved(dir))
		}
		plain := strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == ""
		if (dir == name) != plain {
			t.Errorf("ThreadDir(%q) = %q; the name itself only where it is plain", name, dir)
		}
		if other, ok := folded[strings.ToLower(dir)]; ok {
			t.Fatalf("%q and %q meet in one folder, %q", name, other, dir)
		}
		folded[strings.ToLower(dir)] = name
	}
	t.Logf("%d names, %d folders", len(names), len(folded))
}
