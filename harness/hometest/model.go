package hometest

import (
	"testing"

	"lnk.dev/linkharness/loadgen/scripted"
)

// Model starts a scripted model playing script on loopback, closed when tb
// ends, and returns it and its URL, which LNK_MODEL_PROXY names.
func Model(tb testing.TB, script *scripted.Script) (*scripted.Server, string) {
	tb.Helper()
	srv, addr, err := scripted.Listen("127.0.0.1:0", script)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv, "http://" + addr.String()
}
