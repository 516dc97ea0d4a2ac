package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/postgres"
	"lnk.dev/linkharness/store/storetest"
)

// TestURLEnv names the database the tests use, which they share with
// other runs: each test keeps its rows under an agent of its own and
// removes them at its end. .ci/run starts a server and sets it.
const TestURLEnv = "LNK_TEST_POSTGRES_URL"

// testURL returns the test database's URL, or skips the test without one,
// except in CI (CI=true), where a missing server is a failure.
func testURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(TestURLEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set: CI must start PostgreSQL (see .ci/run)", TestURLEnv)
		}
		tb.Skipf("%s is not set: no PostgreSQL to test against", TestURLEnv)
	}
	return url
}

// agentOf names the agent whose rows a test's store holds: one per
// folder the suite makes.
func agentOf(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return "test-" + hex.EncodeToString(h[:8])
}

// open opens the store of dir's agent, removing its rows when the test
// ends.
func open(t testing.TB, dir string) *postgres.Driver {
	t.Helper()
	url, agent := testURL(t), agentOf(dir)
	d, err := postgres.Open(context.Background(), url, agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { forget(t, url, agent) })
	return d
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return open(t, dir) })
}
