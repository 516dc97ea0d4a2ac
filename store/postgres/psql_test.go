package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/postgres/pgtest"
	"lnk.dev/linkharness/store/storetest"
)

// TestPSQLShows reads the rows with Debian's psql, the query the package's
// doc gives: it prints each event as it was appended, one a line, and the
// lease row with its holder and token.
func TestPSQLShows(t *testing.T) {
	u := pgtest.URL(t)
	cli, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("psql is not installed: CI installs postgresql, which brings it (see .ci/run)")
		}
		t.Skip("psql is not installed")
	}
	dir := t.TempDir()
	d := open(t, dir)
	defer d.Close()
	agent := storetest.Agent(dir)
	ctx := context.Background()
	const n = 20 // seq 9 and 18 are long; every one holds bytes JSON escapes
	want := storetest.AppendThreads(t, d, n, "telegram-42", "x")
	c, _ := d.Open("x")
	token, err := c.(store.Leaser).Lease(ctx, "ada-turn", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	psql := func(query string) []byte {
		t.Helper()
		out, err := exec.Command(cli, u, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", query).Output()
		if err != nil {
			t.Fatalf("psql -c %q: %v", query, err)
		}
		return out
	}
	out := psql(fmt.Sprintf(`SELECT convert_from(event, 'UTF8') FROM lnk_events WHERE agent = '%s' AND thread = 'x' ORDER BY seq`, agent))
	if !bytes.Equal(out, want) {
		t.Fatalf("psql prints %d bytes, %d lines; want the %d events appended, %d bytes", len(out), bytes.Count(out, []byte("\n")), n, len(want))
	}
	if out := psql(fmt.Sprintf(`SELECT count(*) FROM lnk_events WHERE agent = '%s'`, agent)); string(out) != "40\n" {
		t.Fatalf("psql counts %q events, want 40", out)
	}
	lease := psql(fmt.Sprintf(`SELECT holder, token FROM lnk_leases WHERE agent = '%s' AND thread = 'x'`, agent))
	if w := fmt.Sprintf("ada-turn|%d\n", token); string(lease) != w {
		t.Fatalf("psql shows the lease as %q, want %q", lease, w)
	}
	t.Logf("psql printed thread x's %d events (%d bytes) byte for byte, counted 40 rows, and showed the lease row %q", n, len(want), bytes.TrimSpace(lease))
}
