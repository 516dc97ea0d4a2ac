package turn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/hometest"
	"lnk.dev/linkharness/harness/metrics"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store/event"
)

// askWords are words of prompt.SummaryAsk a script matches the summary's
// request by.
const askWords = "Write a summary of what leaves"

// summaryRunner is a runner whose agent has a small window ([window] max,
// compact_at as given), answering summaries with summary.
func summaryRunner(t *testing.T, max int, compactAt float64, summary scripted.Rule) (*Runner, *scripted.Server) {
	t.Helper()
	summary.Match = askWords
	r, m := newRunner(t, &scripted.Script{Rules: []scripted.Rule{summary}})
	s := settings.Defaults()
	s.Window.Max, s.Window.MaxSet, s.Window.CompactAt = max, true, compactAt
	if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
		t.Fatal(err)
	}
	return r, m
}

// talk sends n messages of about 70 tokens each, from message first on,
// and returns, for each, how many requests the model was sent for it.
func talk(t *testing.T, r *Runner, m *scripted.Server, thread string, first, n int, answered func(Answer)) []int {
	t.Helper()
	var asked []int
	for i := first; i < first+n; i++ {
		before := len(m.Requests())
		msg := Message{ID: fmt.Sprint(i), Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("words ", 40)), Answered: answered}
		if _, err := r.Message(context.Background(), thread, msg, nil); err != nil {
			t.Fatal(err)
		}
		asked = append(asked, len(m.Requests())-before)
	}
	return asked
}

// Once the window fills compact_at of its share, the turn answers first,
// then asks for the summary as a continuation of the answer's request; the
// summary is one event, the window's next turns start with it, and a later
// summary covers the earlier one with what left after it.
func TestSummaryAfterTheAnswer(t *testing.T) {
	// The scripted model's default answer: a digest of the ask, which
	// quotes where each summary ends, so each summary's text is its own.
	r, m := summaryRunner(t, 2048, 0.75, scripted.Rule{})
	var logged []int64 // the answers told before their turn summarized
	answered := func(a Answer) {
		ev := readEvents(t, r, "t")
		if ev[len(ev)-1].Seq != a.Seq {
			t.Errorf("answer %d given after the log went on to %d", a.Seq, ev[len(ev)-1].Seq)
		}
		logged = append(logged, a.Seq)
	}
	asked := talk(t, r, m, "t", 1, 60, answered)
	ev := readEvents(t, r, "t")
	sums := ofType(ev, event.TypeSummary)
	t.Logf("requests per turn %v; %d summaries", asked, len(sums))
	if len(sums) < 2 {
		t.Fatalf("%d summaries in 60 turns of a small window: %v", len(sums), asked)
	}
	if len(logged) != len(sums) {
		t.Errorf("the caller was told %d answers before the turn summarized, in %d turns that summarized", len(logged), len(sums))
	}
	made := 0
	for _, n := range asked {
		if n == 2 {
			made++
		} else if n != 1 {
			t.Fatalf("requests per turn: %v", asked)
		}
	}
	if made != len(sums) || r.Metrics.Summaries(metrics.OK) != uint64(made) {
		t.Errorf("%d summaries asked, %d written, %d counted", made, len(sums), r.Metrics.Summaries(metrics.OK))
	}
	var prevThrough int64
	for _, s := range sums {
		before := ev[s.Seq-2]
		if before.Type != event.TypeAnswer || s.Window == nil || s.Window.Start != s.Through+1 || s.Through >= s.Seq {
			t.Fatalf("summary %+v after %+v", s, before)
		}
		if first := ev[s.Through]; first.Type != event.TypeMessage || !s.Window.StartTime.Equal(first.Time) {
			t.Errorf("summary %d: the window starts at %+v", s.Seq, first)
		}
		if s.Through <= prevThrough || s.Usage.Input == 0 || s.Model == "" || s.Provider == "" {
			t.Errorf("summary %+v after one through %d", s, prevThrough)
		}
		prevThrough = s.Through
	}
	// The answers after a summary record the window it opens, with the
	// time of its first message.
	for _, e := range ofType(ev, event.TypeAnswer) {
		if e.Seq > sums[0].Seq && (e.Window.Start < sums[0].Window.Start || !e.Window.StartTime.Equal(ev[e.Window.Start-1].Time)) {
			t.Errorf("answer %d records the window %+v", e.Seq, e.Window)
		}
	}
	// Every answer after a summary was made with the window it opens.
	reqs := m.Requests()
	last := sums[len(sums)-1]
	for i := len(reqs) - 1; i >= 0; i-- {
		body := string(reqs[i])
		if strings.Contains(body, askWords) {
			// The summary's request: the answer's request, continued.
			answer := string(reqs[i-1])
			if head := answer[:len(answer)-len("]}")]; !strings.HasPrefix(body, head) {
				t.Errorf("the summary's request does not continue its answer's:\n%s\n%s", answer, body)
			}
			if strings.Count(body, "cache_control") != strings.Count(answer, "cache_control") {
				t.Errorf("a breakpoint moved")
			}
			break
		}
		if !strings.Contains(body, jsonString(prompt.SummaryHead+"\n"+last.Text)) {
			t.Fatalf("a request after the last summary does not open with it:\n%s", body)
		}
		for j := last.Through - 1; j >= 0; j-- {
			if ev[j].Type == event.TypeMessage {
				if strings.Contains(body, jsonString(ev[j].Text)) {
					t.Errorf("a request after the last summary holds message %d, which it covers", ev[j].Seq)
				}
				break
			}
		}
	}
	// An earlier summary is folded into the next one: the next's request
	// opens with it.
	prev := sums[len(sums)-2]
	found := false
	for _, b := range reqs {
		if strings.Contains(string(b), askWords) && strings.Contains(string(b), jsonString(prompt.SummaryHead+"\n"+prev.Text)) {
			found = true
		}
	}
	if !found && len(reqs) < 100 {
		t.Errorf("no summary's request opens with the summary before it")
	}
	// Never in the copy for people.
	dir, _ := r.Agent.Path(home.Chat, "t")
	b, err := os.ReadFile(filepath.Join(dir, "chat.md"))
	if err != nil || strings.Contains(string(b), last.Text) || !strings.Contains(string(b), "message 1:") {
		t.Errorf("the copy for people: %v\n%s", err, b)
	}
	// Shown to a person who asks for them (lnk agent chat show
	// --summaries), each where it was written, marked as one.
	conv, err := r.Conversation("t")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close()
	var plain, shown strings.Builder
	if _, err := chatcopy.Write(context.Background(), &plain, "ada", conv); err != nil {
		t.Fatal(err)
	}
	if _, err := chatcopy.WriteWithSummaries(context.Background(), &shown, "ada", conv); err != nil {
		t.Fatal(err)
	}
	if plain.String() != string(b) {
		t.Errorf("the copy made from the events differs from chat.md")
	}
	if n := strings.Count(shown.String(), "> **summary of events 1 to "); n != len(sums) {
		t.Errorf("%d summaries shown of %d", n, len(sums))
	}
	for _, s := range sums {
		mark := fmt.Sprintf("<!-- lnk:answer %d -->\n> **summary of events 1 to %d**", s.Seq-1, s.Through)
		if !strings.Contains(shown.String(), mark) || !strings.Contains(shown.String(), "> "+s.Text+"\n") {
			t.Errorf("summary %d not shown after its answer:\n%s", s.Seq, shown.String())
		}
	}
}

// A summary that fails writes nothing and leaves the window as it was; the
// turns after ask again, ever more rarely: the 1st, 2nd and 4th turn past
// the fill ask, the 3rd and the 5th to 7th do not.
func TestSummaryFailsAndBacksOff(t *testing.T) {
	r, m := summaryRunner(t, 4096, 0.5, scripted.Rule{Refuse: true})
	asked := talk(t, r, m, "t", 1, 34, nil)
	ev := readEvents(t, r, "t")
	if n := len(ofType(ev, event.TypeSummary)); n != 0 {
		t.Fatalf("%d summaries written by a model that refuses them", n)
	}
	first := -1
	for i, n := range asked {
		if n == 2 {
			first = i
			break
		}
	}
	t.Logf("requests per turn %v", asked)
	if first < 0 || first+7 > len(asked) {
		t.Fatalf("requests per turn: %v", asked)
	}
	want := []int{2, 2, 1, 2, 1, 1, 1}
	for i, w := range want {
		if asked[first+i] != w {
			t.Fatalf("requests per turn past the fill: %v, want %v", asked[first:], want)
		}
	}
	tries := 0
	for _, n := range asked {
		tries += n - 1
	}
	if got := r.Metrics.Summaries(metrics.Failed); got != uint64(tries) || r.Metrics.Summaries(metrics.OK) != 0 {
		t.Errorf("%d failed summaries counted, %d asked", got, tries)
	}
	// Every answer's window started where the first did until the window
	// outgrew its share: nothing moved it for a summary.
	for _, e := range ofType(ev, event.TypeAnswer) {
		if e.Window.Start != 1 && e.Seq < int64(2*(first+7)) {
			t.Errorf("answer %d's window starts at %d", e.Seq, e.Window.Start)
		}
	}
}

// compact_at = "never": the oldest turns leave unsummarized, as the
// window drops them.
func TestSummaryNever(t *testing.T) {
	r, m := summaryRunner(t, 2048, 0, scripted.Rule{})
	asked := talk(t, r, m, "t", 1, 40, nil)
	for _, n := range asked {
		if n != 1 {
			t.Fatalf("requests per turn: %v", asked)
		}
	}
	ev := readEvents(t, r, "t")
	if len(ofType(ev, event.TypeSummary)) != 0 {
		t.Fatal("a summary with compact_at never")
	}
	if last := ev[len(ev)-1]; last.Window.Start == 1 {
		t.Errorf("the window never dropped: %+v", last.Window)
	}
}

// The exact bytes of an answer's request and of the summary's request after
// it, for each format, side by side in one golden file: the summary's
// request is the answer's, its messages continued by the answer and the
// words asking for the summary, every other byte (the breakpoints, the
// cache key, the tools after the messages) where the answer's had it.
func TestSummaryRequestGolden(t *testing.T) {
	for _, modelName := range []string{"anthropic/claude-opus-5-5", "openai/gpt-6-luna"} {
		provider, _, _ := strings.Cut(modelName, "/")
		t.Run(provider, func(t *testing.T) {
			r, m := newRunner(t, &scripted.Script{Rules: []scripted.Rule{
				{Match: askWords, Text: "Ada asked what is on today; nothing is."},
				{Match: "any", Text: "Nothing is on today."},
			}})
			at := time.Date(2026, 12, 2, 10, 45, 0, 0, time.UTC)
			r.Now = func() time.Time { return at }
			hometest.Populate(t, r.Agent.Dir, modelName)
			s, err := settings.Read(filepath.Join(r.Agent.Dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			// A first turn fills the window past compact_at, with nothing
			// to leave; the second leaves the first.
			s.Window.Max, s.Window.MaxSet, s.Window.CompactAt = 16384, true, 0.001
			if err := settings.Write(filepath.Join(r.Agent.Dir, "config.json"), s); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, text := range []string{"What is on today?", "And tomorrow?"} {
				msg := Message{ID: fmt.Sprint(i), Text: text, From: fromAda, Owner: true, Connection: "telegram"}
				if _, err := r.Message(ctx, "telegram:42", msg, nil); err != nil {
					t.Fatal(err)
				}
			}
			reqs := m.Requests()
			if len(reqs) != 3 || !strings.Contains(string(reqs[2]), askWords) {
				t.Fatalf("%d requests; the last:\n%s", len(reqs), reqs[len(reqs)-1])
			}
			answer, summary := reqs[1], reqs[2]
			// Where the answer's messages end: the tools (OpenAI) and the
			// closing come after them, in both requests alike.
			cut := len(answer) - len("]}")
			if i := bytes.Index(answer, []byte(`],"tools":`)); i >= 0 {
				cut = i
			}
			tail := answer[cut:]
			if !bytes.HasPrefix(summary, answer[:cut]) || !bytes.HasSuffix(summary, tail) {
				t.Errorf("the summary's request is not the answer's continued:\n%s\n%s", answer, summary)
			}
			more := string(summary[cut : len(summary)-len(tail)])
			if strings.Contains(more, "cache_control") || !strings.Contains(more, "Nothing is on today.") || !strings.Contains(more, jsonString("\u201cAnd tomorrow?\u201d")) {
				t.Errorf("what the summary's request adds: %s", more)
			}
			var b bytes.Buffer
			b.WriteString("the answer's request:\n")
			b.Write(answer)
			b.WriteString("\n\nthe summary's request:\n")
			b.Write(summary)
			b.WriteString("\n")
			body := bytes.ReplaceAll(b.Bytes(), []byte(r.Agent.Dir), []byte("/home/ada"))
			const layout = "Mon 2006-01-02 15:04 MST"
			body = bytes.ReplaceAll(body, []byte(at.Local().Format(layout)), []byte(at.Format(layout)))
			golden(t, "summary_request_"+provider+".golden", body)
			// The summary is kept, and the next request opens with it.
			ev := readEvents(t, r, "telegram:42")
			sums := ofType(ev, event.TypeSummary)
			if len(sums) != 1 || sums[0].Through != 2 || sums[0].Text != "Ada asked what is on today; nothing is." {
				t.Fatalf("summaries: %+v", sums)
			}
		})
	}
}

// What is no summary to keep: an answer cut at its limit, refused or
// filtered, with no text, or calling a tool.
func TestSummaryOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp model.Response
		keep bool
	}{
		{"whole", model.Response{Text: "Ada asked…", StopReason: "end_turn"}, true},
		{"whole, OpenAI", model.Response{Text: "Ada asked…", StopReason: "stop"}, true},
		{"cut at its limit", model.Response{Text: "Ada ask", StopReason: "max_tokens"}, false},
		{"cut at its limit, OpenAI", model.Response{Text: "Ada ask", StopReason: "length"}, false},
		{"refused", model.Response{Text: "I can't", StopReason: "refusal"}, false},
		{"filtered", model.Response{Text: "", StopReason: "content_filter"}, false},
		{"blank", model.Response{Text: " \n ", StopReason: "end_turn"}, false},
		{"a call", model.Response{Text: "Saving.", Calls: []event.Call{{ID: "c", Name: "memory__remember"}}}, false},
	} {
		err := summaryOf(&tc.resp)
		if (err == nil) != tc.keep || err != nil && !errors.Is(err, ErrNoSummary) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// A summary through OpenRouter keeps what OpenRouter reported it charged,
// and the answers, which report none here, are priced from the facts.
func TestSummaryCostReported(t *testing.T) {
	charged := 0.0042
	r, m := summaryRunner(t, 2048, 0.75, scripted.Rule{Text: "They talked.", Usage: scripted.Usage{Cost: &charged}})
	path := filepath.Join(r.Agent.Dir, "config.json")
	s, err := settings.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Model.Provider = "openrouter"
	if err := settings.Write(path, s); err != nil {
		t.Fatal(err)
	}
	talk(t, r, m, "t", 1, 30, nil)
	ev := readEvents(t, r, "t")
	sums := ofType(ev, event.TypeSummary)
	if len(sums) == 0 {
		t.Fatal("no summary in 30 turns of a small window")
	}
	for _, e := range sums {
		if e.Provider != "openrouter" || e.Cost != charged || e.CostSource != event.CostReported {
			t.Errorf("summary %d: %s cost %v %q", e.Seq, e.Provider, e.Cost, e.CostSource)
		}
	}
	for _, e := range ofType(ev, event.TypeAnswer) {
		if e.Cost <= 0 || e.CostSource != event.CostPriced {
			t.Errorf("answer %d: cost %v %q", e.Seq, e.Cost, e.CostSource)
		}
	}
}
