package postgres_test

import (
	"context"
	"testing"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/postgres"
	"lnk.dev/linkharness/store/postgres/pgtest"
	"lnk.dev/linkharness/store/storetest"
)

// open opens the store of dir's agent, removing its rows when the test
// ends.
func open(t testing.TB, dir string) *postgres.Driver {
	t.Helper()
	url, agent := pgtest.URL(t), storetest.Agent(dir)
	d, err := postgres.Open(context.Background(), url, agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgtest.Forget(t, url, agent) })
	return d
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string) store.Driver { return open(t, dir) })
}
