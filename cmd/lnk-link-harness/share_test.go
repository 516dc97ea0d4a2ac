package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/postgres"
)

// buildSQLite builds the SQLite plugin beside the programs, where
// lnk-link-harness finds it, once per test binary.
var buildSQLite = sync.OnceValue(func() error {
	bin, err := build()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "lnk-sqlite"), "lnk.dev/linkharness/cmd/lnk-sqlite")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build lnk-sqlite: %v\n%s", err, out)
	}
	return nil
})

// buildPostgres builds the PostgreSQL plugin beside the programs, once per
// test binary.
var buildPostgres = sync.OnceValue(func() error {
	bin, err := build()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "lnk-postgres"), "lnk.dev/linkharness/cmd/lnk-postgres")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build lnk-postgres: %v\n%s", err, out)
	}
	return nil
})

// postgresSchema sets the environment the harness and its lnk-postgres
// read (LNK_POSTGRES_URL) to the test database, LNK_TEST_POSTGRES_URL, in
// a schema of the test's own, dropped when the test ends: every test's
// agent is ada, and other runs share the database. Without the variable
// the test is skipped, but in CI (CI=true) it fails.
func postgresSchema(t *testing.T) {
	t.Helper()
	base := os.Getenv("LNK_TEST_POSTGRES_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("LNK_TEST_POSTGRES_URL is not set: CI must start PostgreSQL (see .ci/run)")
		}
		t.Skip("LNK_TEST_POSTGRES_URL is not set: no PostgreSQL to test against")
	}
	h := sha256.Sum256([]byte(t.TempDir()))
	schema := "lnk_test_" + hex.EncodeToString(h[:8])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	t.Setenv(postgres.URLEnv, withSearchPath(t, base, schema))
}

// withSearchPath returns the connection string conn (a URL or a key=value
// DSN) with its search_path set to schema.
func withSearchPath(t *testing.T, conn, schema string) string {
	t.Helper()
	if !strings.HasPrefix(conn, "postgres://") && !strings.HasPrefix(conn, "postgresql://") {
		return conn + " search_path=" + schema
	}
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatalf("LNK_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Two processes serving one home take turns on one conversation: four
// callers alternate between them, and every message is answered 200, is
// written once, and has an answer after it; the seqs run 1..n.
func TestTwoProcessesOneThread(t *testing.T) {
	for _, kind := range []string{"log", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			switch kind {
			case "sqlite":
				if err := buildSQLite(); err != nil {
					t.Fatal(err)
				}
			case "postgres":
				postgresSchema(t)
				if err := buildPostgres(); err != nil {
					t.Fatal(err)
				}
			}
			h := startHarness(t, "[[rule]]\nmatch = \"any\"\ntext = \"answer to {text}\"\nlatency_ms = 5\n", false)
			os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"storage": {"conversations": "`+kind+`"}}`), 0o600)
			// The second process on the same home, key and model.
			second := &harness{home: h.home, key: h.key}
			keyFile := filepath.Join(filepath.Dir(h.home), "key")
			var env []string
			for _, a := range h.cmd.Env {
				if strings.HasPrefix(a, "LNK_MODEL_PROXY=") { // the last one is the test's
					env = append(env, a)
				}
			}
			_, addr := start(t, env, "lnk-link-harness", "serve", "--home", h.home, "--listen", "127.0.0.1:0", "--key-file", keyFile)
			second.url = "http://" + addr
			procs := []*harness{h, second}

			const callers, each = 4, 10
			type told struct {
				id  string
				s   sent
				err error
			}
			out := make(chan told, callers*each)
			for c := range callers {
				go func() {
					for i := range each {
						id := fmt.Sprintf("c%d-%d", c, i)
						s, err := procs[(c+i)%2].message("shared", id, id)
						out <- told{id, s, err}
					}
				}()
			}
			answers := map[string]sent{}
			for range callers * each {
				o := <-out
				if o.err != nil {
					t.Errorf("message %s: %v", o.id, o.err)
					continue
				}
				answers[o.id] = o.s
			}

			ev := h.events(t, "shared")
			at := map[string]int64{}
			for i, e := range ev {
				if e.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d", i+1, e.Seq)
				}
				if e.Type != event.TypeMessage {
					continue
				}
				if _, twice := at[e.ID]; twice {
					t.Errorf("message %s written twice", e.ID)
				}
				at[e.ID] = e.Seq
			}
			if len(at) != callers*each {
				t.Errorf("%d messages written, want %d", len(at), callers*each)
			}
			for id, s := range answers {
				if s.seq <= at[id] || s.seq > int64(len(ev)) || ev[s.seq-1].Type != event.TypeAnswer {
					t.Errorf("message %s (seq %d) told seq %d", id, at[id], s.seq)
				}
			}
			if n := len(ev); n == 0 || ev[n-1].Type != event.TypeAnswer {
				t.Errorf("the conversation does not end with an answer")
			}
		})
	}
}

// events reads thread's events as the harness serves them, one a line.
func (h *harness) events(t *testing.T, thread string) []event.Event {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url+"/v1/agents/ada/chats/"+thread, nil)
	req.Header.Set("Authorization", "Bearer "+h.key)
	req.Header.Set("Accept", "application/jsonl")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reading %s: %s", thread, resp.Status)
	}
	var evs []event.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, event.MaxBytes+1)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}
