package fleet

import (
	"errors"
	"strings"
	"testing"

	"lnk.dev/linkharness/harness/home"
)

// A control line either binds a unit with a home, a key of one line and
// 16 bytes at least and a plain name, or is refused with errBind.
func FuzzParseBind(f *testing.F) {
	f.Add([]byte(`{"agent":"ada","home":"/h","key":"0123456789abcdef","settings":{"model":{"name":"anthropic/x"}},"store":"http://s"}`))
	f.Add([]byte(`{"home":"/h/ada","key":"0123456789abcdef","listen":"127.0.0.1:0"}`))
	f.Add([]byte(`{"home":"/h","key":"short"} {}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, line []byte) {
		u, err := parseBind(line)
		if err != nil {
			if !errors.Is(err, errBind) {
				t.Fatalf("%q: %v is not errBind", line, err)
			}
			return
		}
		if u.Home == "" || len(u.key) < 16 || strings.ContainsAny(u.key, "\r\n") || u.Listen == "" || home.Plain(nameOf(u)) != nil || u.KeyFile != "" {
			t.Fatalf("%q bound %+v", line, u)
		}
	})
}
