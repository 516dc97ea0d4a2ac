package model

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/storetest"
)

// randomMessages is a conversation as a window holds it: user messages
// with text, results or both, answers with text, thinking and calls.
func randomMessages(rng *rand.Rand, n int) []Message {
	text := func() string {
		words := []string{"plans", "the day", "a \"quote\"", "naïve", "line\nbreak", "tab\t", "<b>", "ok"}
		s := ""
		for range 1 + rng.IntN(6) {
			s += words[rng.IntN(len(words))] + " "
		}
		return s
	}
	msgs := make([]Message, 0, n)
	var calls []event.Call
	for i := range n {
		if i%2 == 0 {
			m := Message{Role: "user"}
			for _, c := range calls {
				m.Results = append(m.Results, Result{CallID: c.ID, Name: c.Name, Text: text(), IsError: rng.IntN(5) == 0})
			}
			if len(m.Results) == 0 || rng.IntN(3) == 0 {
				m.Text = text()
			}
			msgs, calls = append(msgs, m), nil
			continue
		}
		m := Message{Role: "assistant", Text: text()}
		if rng.IntN(3) == 0 {
			m.Thinking = []byte(`[{"thinking":"hmm","signature":"c2ln"}]`)
		}
		for k := range rng.IntN(3) {
			calls = append(calls, event.Call{ID: fmt.Sprintf("call_%d_%d", i, k), Name: "web__echo", Args: []byte(`{"text":"x"}`)})
		}
		m.Calls = calls
		if len(calls) > 0 && rng.IntN(2) == 0 {
			m.Text = ""
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// encode is req's body in format, as its client makes it.
func encode(t *testing.T, format string, req *Request) []byte {
	t.Helper()
	var (
		b   []byte
		err error
	)
	switch format {
	case FormatAnthropic:
		b, err = appendAnthropicRequest(nil, req)
	case FormatOpenAI, FormatOpenRouter:
		b, err = appendOpenAIRequest(nil, req, format == FormatOpenRouter)
	case FormatOllama:
		b, err = appendOllamaRequest(nil, req)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A request sent with a prefix kept from the requests before is the same
// bytes as one encoded afresh, in every format, wherever the prefix ends,
// with or without a system prompt, the moving breakpoint on the last
// message or where CacheThrough puts it; the prefix grown a few messages
// at a time as a conversation grows it.
func TestPrefixSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(storetest.Seed(t), 0))
	for _, format := range []string{FormatAnthropic, FormatOpenAI, FormatOpenRouter, FormatOllama} {
		t.Run(format, func(t *testing.T) {
			for try := range 200 {
				msgs := randomMessages(rng, 1+rng.IntN(30))
				var p Prefix
				for k := 0; k <= len(msgs); k += 1 + rng.IntN(4) {
					if err := p.Extend(format, msgs[:k]); err != nil {
						t.Fatal(err)
					}
					req := &Request{Model: "m", Messages: msgs, MaxTokens: 100, Window: 4000, CacheKey: "k"}
					if rng.IntN(4) != 0 {
						req.System, req.SystemStable = "Base.\n\nWho you are.\n\nNotes.", len("Base.")
					}
					if rng.IntN(3) == 0 {
						req.CacheThrough = rng.IntN(len(msgs) + 1)
					}
					want := encode(t, format, req)
					req.Prefix = &p
					if got := encode(t, format, req); !bytes.Equal(got, want) {
						t.Fatalf("try %d, %d of %d messages kept, through %d:\n got %s\nwant %s", try, k, len(msgs), req.CacheThrough, got, want)
					}
				}
			}
		})
	}
}

// A prefix of another format, or of more messages than the request holds,
// is not used; an empty one neither.
func TestPrefixOtherFormatUnused(t *testing.T) {
	msgs := []Message{{Role: "user", Text: "one"}, {Role: "assistant", Text: "two"}, {Role: "user", Text: "three"}}
	var p Prefix
	if err := p.Extend(FormatOpenAI, msgs); err != nil {
		t.Fatal(err)
	}
	req := &Request{Model: "m", Messages: msgs, Prefix: &p}
	if kept(req, FormatAnthropic) != nil || kept(req, FormatOllama) != nil {
		t.Error("a prefix used in another format")
	}
	req.Messages = msgs[:2]
	if kept(req, FormatOpenAI) != nil {
		t.Error("a prefix of three messages used for two")
	}
	if err := p.Extend(FormatAnthropic, msgs[:1]); err != nil || p.Len() != 1 {
		t.Errorf("another format: %v, %d messages", err, p.Len())
	}
	if err := p.Extend("smoke", msgs); err == nil {
		t.Error("an unknown format taken")
	}
}

// Sending the kept bytes into a body made to its size allocates nothing
// for the messages kept.
func TestPrefixAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	rng := rand.New(rand.NewPCG(1, 0))
	msgs := randomMessages(rng, 400)
	msgs[398], msgs[399] = Message{Role: "user", Text: "new"}, Message{Role: "assistant", Text: "and an answer"}
	var p Prefix
	if err := p.Extend(FormatAnthropic, msgs[:398]); err != nil {
		t.Fatal(err)
	}
	req := &Request{Model: "m", System: "S", Messages: msgs, Prefix: &p}
	buf := make([]byte, 0, bodySize(req, FormatAnthropic))
	n := testing.AllocsPerRun(50, func() {
		if _, err := appendAnthropicRequest(buf[:0], req); err != nil {
			t.Fatal(err)
		}
	})
	if n > 0 {
		t.Errorf("%.0f allocations to send 400 messages, 398 kept: want none", n)
	}
}

func BenchmarkEncodeMessages(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 0))
	msgs := randomMessages(rng, 800)
	for _, kept := range []bool{false, true} {
		b.Run(fmt.Sprintf("messages=800/kept=%v", kept), func(b *testing.B) {
			req := &Request{Model: "m", System: "S", Messages: msgs}
			if kept {
				req.Prefix = &Prefix{}
				if err := req.Prefix.Extend(FormatAnthropic, msgs[:798]); err != nil {
					b.Fatal(err)
				}
			}
			buf := make([]byte, 0, bodySize(req, FormatAnthropic))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := appendAnthropicRequest(buf[:0], req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
