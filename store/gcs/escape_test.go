package gcs

import (
	"strings"
	"testing"
)

// A key is escaped one-to-one: two keys never make one segment (each
// byte outside [A-Za-z0-9._-] is %XX, '%' itself too), case is kept, and
// unescape gives the key back. Thread folders' names hold '~' and upper
// case (telegram-42~mxmekvd5hxz7cn2b, Web1~7o3pjrjmj3s24kkv).
func TestEscapeOneToOne(t *testing.T) {
	keys := []string{
		"telegram-42", "telegram-42~mxmekvd5hxz7cn2b", "telegram:42", "Web1", "web1", "Web1~7o3pjrjmj3s24kkv",
		"a%41", "aA", "a%7Eb", "a~b", "a-b", "a b", "%", "%%", "%25", "", "日本", "a/b", "\x00\xff",
	}
	seen := map[string]string{}
	for _, k := range keys {
		e := escape(k)
		if other, ok := seen[e]; ok {
			t.Errorf("%q and %q both escape to %q", k, other, e)
		}
		seen[e] = k
		checkEscaped(t, k, e)
	}
	if got := escape("telegram-42~mxmekvd5hxz7cn2b"); got != "telegram-42%7Emxmekvd5hxz7cn2b" {
		t.Errorf("escape of a hashed folder's name: %q", got)
	}
}

// FuzzEscape: any key escapes to one segment of [A-Za-z0-9._-%] that
// unescapes to it, and escaping is one-to-one.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"telegram-42~mxmekvd5hxz7cn2b", "a%41", "aA", "日本", "%"} {
		f.Add(s, strings.ToUpper(s))
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkEscaped(t, a, escape(a))
		if a != b && escape(a) == escape(b) {
			t.Fatalf("%q and %q both escape to %q", a, b, escape(a))
		}
	})
}

func checkEscaped(t *testing.T, key, e string) {
	t.Helper()
	if strings.Trim(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-%") != "" {
		t.Fatalf("escape(%q) = %q, bytes outside one segment's", key, e)
	}
	if back, err := unescape(e); err != nil || back != key {
		t.Fatalf("unescape(escape(%q)) = %q, %v", key, back, err)
	}
}
