package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lnk.dev/linkharness/store/event"
)

// recoverOnce asks _link/recover once.
func (f *fixture) recoverOnce(t *testing.T) []pendingAnswer {
	t.Helper()
	code, body := f.do(t, http.MethodGet, "/_link/recover", nil)
	if code != 200 {
		t.Fatalf("recover: %d %s", code, body)
	}
	var out []pendingAnswer
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// An answer a process wrote and died before telling (its events there,
// nothing marking it told) is handed over at _link/recover, marked
// crashed, once the next turn of its conversation finds it: to one of 8
// callers asking at once, and never again; answers that were told are
// never handed over.
func TestCrashedAnswerHandedOverOnce(t *testing.T) {
	f := newFixture(t, nil)
	f.said(t, "t", `{"id":"m0","text":"told 0","owner":true}`, `{"id":"m1","text":"told 1","owner":true}`)
	// A process that died after writing its answer, before telling it.
	now := time.Now().UTC()
	f.kept(t, "t",
		event.Event{Seq: 5, Time: now, Type: event.TypeMessage, ID: "m2", Owner: true, Text: "never told"},
		event.Event{Seq: 6, Time: now, Type: event.TypeAnswer, Text: "the answer nobody got"})
	if got := f.recoverOnce(t); len(got) != 0 {
		t.Fatalf("handed over before a turn found it: %+v", got)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/t/messages", key, `{"id":"m3","text":"next","owner":true}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var (
		mu  sync.Mutex
		all []pendingAnswer
		wg  sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			got := f.recoverOnce(t)
			mu.Lock()
			all = append(all, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	want := pendingAnswer{Agent: "ada", Thread: "t", Seq: 6, Text: "the answer nobody got", Crashed: true}
	if len(all) != 1 || all[0] != want {
		t.Fatalf("8 callers were handed %+v, want %+v once", all, want)
	}
	if code, body := f.post(t, "/v1/agents/ada/chats/t/messages", key, `{"id":"m4","text":"and again","owner":true}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if got := f.recoverOnce(t); len(got) != 0 {
		t.Errorf("handed over again, or a told answer: %+v", got)
	}
	if n := f.operations(t, "ada", "hand_over"); n != 1 {
		t.Errorf("hand-overs counted %v, want 1", n)
	}
}

// toldAtReply is a ResponseWriter that reads the conversation's told
// record as the reply's answer goes (the JSON body, or the stream's done
// event): what a process killed right then would have left.
type toldAtReply struct {
	*httptest.ResponseRecorder
	dir  string // the conversation's folder
	told int64  // -1 until the answer was written
}

func (w *toldAtReply) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`"seq":`)) && w.told < 0 {
		w.told = 0
		if b, err := os.ReadFile(filepath.Join(w.dir, "told")); err == nil {
			fmt.Sscan(string(b), &w.told)
		}
	}
	return w.ResponseRecorder.Write(b)
}

// An answer is marked told before its reply's answer is written, in JSON
// and streamed: a process killed once its caller has the answer leaves
// nothing for a later turn to hand over again.
func TestToldBeforeReply(t *testing.T) {
	f := newFixture(t, nil)
	for i, accept := range []string{"application/json", "text/event-stream"} {
		req := httptest.NewRequest(http.MethodPost, "/v1/agents/ada/chats/t/messages", strings.NewReader(fmt.Sprintf(`{"id":"m%d","text":"hi","owner":true}`, i)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Accept", accept)
		w := &toldAtReply{ResponseRecorder: httptest.NewRecorder(), dir: filepath.Join(f.home, "chats", "t"), told: -1}
		f.srv.ServeHTTP(w, req)
		body := w.Body.String()
		if i := strings.LastIndex(body, "data: "); accept == "text/event-stream" && i >= 0 {
			body = body[i+len("data: "):]
		}
		var a answerBody
		if w.Code != 200 || json.Unmarshal([]byte(strings.TrimSpace(body)), &a) != nil || a.Seq == 0 {
			t.Fatalf("%s: %d %s", accept, w.Code, w.Body)
		}
		if w.told < a.Seq {
			t.Errorf("%s: the answer at seq %d went with %d recorded told", accept, a.Seq, w.told)
		}
	}
}
