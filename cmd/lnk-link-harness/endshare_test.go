package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/ending"
	"lnk.dev/linkharness/harness/fleet/fleettest"
	"lnk.dev/linkharness/harness/home"
)

// endedAnswer is a turn's answer as a caller reads it, ended or not.
type endedAnswer struct {
	Seq   int64
	Text  string
	Ended bool
}

// postAnswer posts body to path at base with key and reads the answer.
func postAnswer(t *testing.T, base, key, path, body string) (int, endedAnswer, string) {
	t.Helper()
	code, b, err := fleettest.Do(http.DefaultClient, http.MethodPost, base+path, key, body)
	if err != nil {
		t.Error(err)
		return 0, endedAnswer{}, ""
	}
	var a endedAnswer
	json.Unmarshal([]byte(b), &a)
	return code, a, b
}

// Two processes serve one home; the first runs a turn whose model holds
// its answer a minute. /end at the second answers 200 with the ended
// answer, and the turn's caller at the first is told the same, long
// before the model would have answered: for a log, a compact
// conversation, SQLite and PostgreSQL. The time the /end took is logged;
// its bound is two ticks of the end record's watch (ending.Every) and the
// turn's own ending.
func TestEndFromAnotherProcess(t *testing.T) {
	for _, kind := range []string{"log", "compact", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			keptBy(t, kind)
			h := startHarness(t, "[[rule]]\nmatch = \"slow\"\ntext = \"too late\"\nlatency_ms = 60000\n", true)
			os.WriteFile(filepath.Join(h.home, "config.json"), []byte(`{"storage": {"conversations": "`+kind+`"}}`), 0o600)
			var env []string
			for _, a := range h.cmd.Env {
				if strings.HasPrefix(a, "LNK_MODEL_PROXY=") { // the last one is the test's
					env = append(env, a)
				}
			}
			keyFile := filepath.Join(filepath.Dir(h.home), "key")
			_, addr := start(t, env, "lnk-link-harness", "serve", "--home", h.home, "--listen", "127.0.0.1:0", "--key-file", keyFile)
			second := "http://" + addr

			const path = "/v1/agents/ada/chats/web:1/"
			// Nothing runs: the second says so, and writes nothing.
			if code, _, body := postAnswer(t, second, h.key, path+"end", ""); code != http.StatusConflict {
				t.Fatalf("/end with no turn running: %d %s, want 409", code, body)
			}
			type told struct {
				code int
				a    endedAnswer
				body string
			}
			turnCaller := make(chan told, 1)
			go func() {
				code, a, body := postAnswer(t, h.url, h.key, path+"messages", `{"id":"m1","text":"a slow one"}`)
				turnCaller <- told{code, a, body}
			}()
			<-h.asked // the first process's turn is with the model
			began := time.Now()
			code, a, body := postAnswer(t, second, h.key, path+"end", "")
			took := time.Since(began)
			if code != http.StatusOK || !a.Ended || a.Text != ending.Text {
				t.Fatalf("/end at the second process: %d %s, want 200 and the ended answer", code, body)
			}
			got := <-turnCaller
			if got.code != http.StatusOK || got.a != a {
				t.Fatalf("the turn's caller told %d %s, want %+v", got.code, got.body, a)
			}
			t.Logf("%s: /end at the other process answered in %v (ticks of %v)", kind, took.Round(time.Millisecond), ending.Every)
			dir, _ := home.Agent{Name: "ada", Dir: h.home}.Path(home.Chat, "web:1")
			if _, err := os.Stat(filepath.Join(dir, "end")); err == nil {
				t.Error("the end record is left")
			}
			// The conversation goes on at either process.
			if code, _, body := postAnswer(t, second, h.key, path+"messages", `{"id":"m2","text":"next"}`); code != http.StatusOK {
				t.Errorf("the next message: %d %s", code, body)
			}
		})
	}
}
