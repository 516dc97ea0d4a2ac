package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 10, 45, 1, 123456789, time.UTC)

// typicalAnswer is an answer of about 600 bytes, as a conversation holds
// many of.
func typicalAnswer() *Event {
	return &Event{
		Seq: 1234, Time: t0, Type: TypeAnswer,
		Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 7) +
			"Here is what I found: \"quoted\", a tab\tand a newline\n.",
		Model: "anthropic/claude-opus-5-5", Provider: "anthropic", ResponseID: "msg_01XFDUDYJgAACzvnptvVoYEL",
		Usage:     Usage{Input: 12034, Output: 187, CacheRead: 11520, CacheWrite: 514},
		LatencyMS: 1834, Cost: 0.004127, CostSource: CostReported,
		Window: &Window{Start: 1101, StartTime: t0.Add(-time.Hour), TokensBefore: 88211},
	}
}

func TestRoundTrip(t *testing.T) {
	events := []*Event{
		typicalAnswer(),
		{Seq: 1, Time: t0, Type: TypeMessage, Thread: "telegram:42", ID: "m-1", From: Sender{ID: "u1", Name: "Ada"},
			Owner: true, Connection: "telegram", Head: "[Wed 2026-12-02 10:45 UTC · telegram · Ada, your owner]", Text: "héllo \u2028 \x01 <b>"},
		{Seq: 2, Time: t0, Type: TypeAnswer, Thinking: []byte(`[{"thinking":"hm","signature":"c2ln"}]`),
			Calls: []Call{{ID: "c1", Name: "memory__search", Args: []byte(`{"q":"x"}`)}, {ID: "c2", Name: "run__command"}}},
		{Seq: 3, Time: t0, Type: TypeResult, CallID: "c1", Name: "memory__search", Text: "found", Error: "boom", Truncated: true},
		{Seq: 4, Time: t0, Type: TypeSummary, Through: 3, Text: "they talked", Model: "m/x", Usage: Usage{Output: 5}},
		{Seq: 5, Time: t0, Type: TypeAnswer, Cost: 0.00131, CostSource: CostPriced},
		{Seq: 6, Time: t0, Type: TypeAnswer, CostSource: CostReported},    // reported as nothing: written, 0
		{Seq: 7, Time: t0, Type: TypeSummary, Cost: 2, CostSource: "est"}, // a source of another program, kept
	}
	var d Decoder
	for _, e := range events {
		b := Append(nil, e)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON: %s", b)
		}
		var got Event
		if err := d.Decode(b, &got); err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		if e.Calls != nil && e.Calls[1].Args == nil {
			e.Calls[1].Args = []byte("{}")
		}
		if got.Calls == nil {
			got.Calls = e.Calls[:0:0]
			if e.Calls == nil {
				got.Calls = nil
			}
		}
		if got.Extra != nil && len(got.Extra) == 0 {
			got.Extra = nil
		}
		if got.Thinking != nil && len(got.Thinking) == 0 {
			got.Thinking = nil
		}
		if !reflect.DeepEqual(&got, e) {
			t.Errorf("round trip of %s:\ngot  %+v\nwant %+v", b, got, *e)
		}
		if again := Append(nil, &got); !bytes.Equal(again, b) {
			t.Errorf("encoding again:\n%s\n%s", again, b)
		}
	}
}

func TestUnknownKeysKept(t *testing.T) {
	in := `{"seq":7,"time":"2026-12-02T10:45:01.123456789Z","type":"message","text":"hi","x_future":{"a":[1,2.50,"\u00e9"]},"z":null}`
	var d Decoder
	var e Event
	if err := d.Decode([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	if got := string(e.Extra); got != `"x_future":{"a":[1,2.50,"\u00e9"]},"z":null` {
		t.Fatalf("Extra = %s", got)
	}
	if out := string(Append(nil, &e)); out != in {
		t.Fatalf("written back:\n%s\nwant\n%s", out, in)
	}
}

// Where a cost comes from is written after it, and a cost with a source is
// written even when 0; an event written before sources were kept has a
// cost and no source, which reads as priced.
func TestCostSource(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Seq: 1, Type: TypeAnswer, Cost: 0.0042, CostSource: CostReported}, `"cost":0.0042,"cost_source":"reported"`},
		{Event{Seq: 1, Type: TypeAnswer, CostSource: CostReported}, `"cost":0,"cost_source":"reported"`},
		{Event{Seq: 1, Type: TypeAnswer, Cost: 0.5, CostSource: CostPriced}, `"cost":0.5,"cost_source":"priced"`},
		{Event{Seq: 1, Type: TypeAnswer, Cost: 0.5}, `"cost":0.5}`},
		{Event{Seq: 1, Type: TypeAnswer}, `"type":"answer"}`},
	} {
		if b := Append(nil, &tc.e); !bytes.Contains(b, []byte(tc.want)) {
			t.Errorf("%+v written %s, want %s in it", tc.e, b, tc.want)
		}
	}
	var d Decoder
	var e Event
	old := `{"seq":2,"time":"2026-12-02T10:45:01.123456789Z","type":"answer","cost":0.00131}`
	if err := d.Decode([]byte(old), &e); err != nil || e.Cost != 0.00131 || e.CostSource != "" || len(e.Extra) != 0 {
		t.Fatalf("an answer written before: %+v, %v", e, err)
	}
	if out := string(Append(nil, &e)); out != old {
		t.Fatalf("written back:\n%s\nwant\n%s", out, old)
	}
	if err := d.Decode([]byte(`{"seq":2,"type":"answer","cost_source":1}`), &e); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a source that is not a string: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, in := range []string{
		``, `[]`, `{"seq":1}`, `{"type":"message"}`, `{"seq":0,"type":"message"}`, `{"seq":-1,"type":"message"}`,
		`{"seq":"1","type":"message"}`, `{"seq":1,"type":"message","text":5}`, `{"seq":1,"type":"message","time":"yesterday"}`,
		`{"seq":1,"type":"answer","calls":{}}`, `{"seq":1,"type":"answer","usage":{"input":"x"}}`, `{"seq":1,"type":"message"`,
		`{"seq":1,"type":"message","time":"2026-02-30T10:45:01.123456789Z"}`,
	} {
		var d Decoder
		var e Event
		if err := d.Decode([]byte(in), &e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Decode(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestTimeForms(t *testing.T) {
	for _, s := range []string{"2026-12-02T10:45:01.123456789Z", "2026-12-02T11:45:01.123456789+01:00", "2026-12-02T10:45:01.123456789Z"} {
		got, ok := parseTime([]byte(s))
		if !ok || !got.Equal(t0) || got.Location() != time.UTC {
			t.Errorf("parseTime(%q) = %v, %v", s, got, ok)
		}
	}
}

func TestSeqOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{`{"seq":1,"type":"message"}`, 1, true},
		{`{"seq":123456789012,"x":1}`, 123456789012, true},
		{`{"seq":42}`, 42, true},
		{`{"type":"message","text":"{\"seq\":9}","seq":5}`, 5, true},
		{` { "a" : {"seq":9}, "b":[{"seq":8}], "seq" : 7 }`, 7, true},
		{`{"type":"x"}`, 0, false},
		{`{"seq":0}`, 0, false},
		{`{"seq":-3}`, 0, false},
		{`{"seq":01}`, 0, false},
		{`{"seq":1.5}`, 0, false},
		{`{"seq":"1"}`, 0, false},
		{`{"seq":1234567890123456789}`, 0, false},
		{`not json`, 0, false},
		{`{"a":"unterminated`, 0, false},
	} {
		got, err := SeqOf([]byte(tc.in))
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("SeqOf(%s) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("SeqOf(%s) = %d, %v; want ErrInvalid", tc.in, got, err)
		}
	}
}

func TestMessageID(t *testing.T) {
	for _, tc := range []struct {
		in, id  string
		message bool
		ok      bool
	}{
		{`{"seq":1,"type":"message","id":"m-1","text":"x"}`, "m-1", true, true},
		{`{"text":"{\"id\":\"no\"}","id":"yes","seq":2,"type":"message"}`, "yes", true, true},
		{`{"seq":3,"type":"mess\u0061ge","id":"esc"}`, "esc", true, true},
		{`{"seq":4,"type":"message","id":"a\"b"}`, `a\"b`, true, true},
		{`{"seq":5,"type":"message","id":7}`, "", true, true},
		{`{"seq":6,"type":"message","id":"first","id":"second"}`, "first", true, true},
		{`{"seq":7,"type":"message"}`, "", true, true},
		{` { "calls" : [{"id":"c"}], "type" : "answer" , "seq":8}`, "", false, true},
		{`{"seq":9,"type":"answer","id":"a"}`, "", false, true},
		{`{"seq":10,"type":"answer","text":"unterminated`, "", false, true}, // not read past the type
		{`{}`, "", false, true},
		{`not json`, "", false, false},
		{`{"type":"message","id":"unterminated`, "", false, false},
		{`{"type":}`, "", false, false},
		{`["type","message"]`, "", false, false},
	} {
		id, message, err := MessageID([]byte(tc.in))
		if !tc.ok {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("MessageID(%s) = %q, %v, %v; want ErrInvalid", tc.in, id, message, err)
			}
			continue
		}
		if err != nil || string(id) != tc.id || message != tc.message {
			t.Errorf("MessageID(%s) = %q, %v, %v; want %q, %v", tc.in, id, message, err, tc.id, tc.message)
		}
	}
	if s, err := UnquoteRaw([]byte(`a\"b\u00e9`)); err != nil || s != `a"bé` {
		t.Errorf("UnquoteRaw = %q, %v", s, err)
	}
	if _, err := UnquoteRaw([]byte(`a\`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("UnquoteRaw of a lone backslash: %v", err)
	}
	for _, tc := range []struct {
		raw  []byte
		s    string
		want bool
	}{
		{[]byte("m-1"), "m-1", true},
		{[]byte("m-1"), "m-2", false},
		{[]byte(`a\"b\u00e9`), `a"bé`, true},
		{[]byte(`a\"b`), `a\"b`, false},
		{[]byte(""), "", true},
		{nil, "", false}, // no string at all
		{[]byte(`a\`), `a\`, false},
	} {
		if got := RawIs(tc.raw, tc.s); got != tc.want {
			t.Errorf("RawIs(%q, %q) = %v", tc.raw, tc.s, got)
		}
	}
}

// Allocation budgets of the hot paths: exact, so they can fail CI.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	line := Append(nil, typicalAnswer())
	other := []byte(`{"type":"message","text":"x","seq":99}`)
	if n := testing.AllocsPerRun(100, func() { SeqOf(line); SeqOf(other) }); n != 0 {
		t.Errorf("SeqOf allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { MessageID(line); MessageID(other) }); n != 0 {
		t.Errorf("MessageID allocates %v times, want 0", n)
	}
	buf := make([]byte, 0, 4096)
	e := typicalAnswer()
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], e) }); n != 0 {
		t.Errorf("Append into a buffer allocates %v times, want 0", n)
	}
	var d Decoder
	var got Event
	// The strings handed out (text, model, provider, response id) and the
	// window; the type and the cost's source are constants.
	if n := testing.AllocsPerRun(100, func() { d.Decode(line, &got) }); n > 6 {
		t.Errorf("decoding a typical answer allocates %v times, budget 6", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	line := Append(nil, typicalAnswer())
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	var d Decoder
	var e Event
	for b.Loop() {
		if err := d.Decode(line, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	e := typicalAnswer()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], e)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkMessageID(b *testing.B) {
	line := Append(nil, typicalAnswer())
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := MessageID(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSeqOf(b *testing.B) {
	line := Append(nil, typicalAnswer())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SeqOf(line); err != nil {
			b.Fatal(err)
		}
	}
}

// The decoder never panics, and what it decodes encodes to JSON that
// decodes to the same event.
func FuzzDecode(f *testing.F) {
	f.Add(Append(nil, typicalAnswer()))
	f.Add([]byte(`{"seq":1,"time":"2026-12-02T10:45:01.123456789Z","type":"message","thread":"t:1","from":{"id":"u","name":"A"},"owner":true,"text":"hi","zz":[1,{"a":null}]}`))
	f.Add([]byte(`{"seq":2,"type":"answer","calls":[{"id":"c","name":"n","args":{"x":1}}],"thinking":[{"thinking":"t"}]}`))
	f.Add([]byte(`{"seq":3,"type":"result","call_id":"c","text":"\ud83d\ude00","truncated":true}`))
	f.Add([]byte(`{"seq":1,"type":"x","\u00e9":"k"}`))
	f.Add([]byte(`{"seq":4,"type":"answer","cost_source":"reported"}`))
	f.Add([]byte(`{"seq":5,"type":"summary","cost":-0,"cost_source":"pr\u0069ced"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		var e Event
		if err := d.Decode(b, &e); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		out := Append(nil, &e)
		if !json.Valid(out) {
			t.Fatalf("encoded invalid JSON: %s", out)
		}
		if seq, err := SeqOf(out); err != nil || seq != e.Seq {
			t.Fatalf("SeqOf(%s) = %d, %v; want %d", out, seq, err, e.Seq)
		}
		var e2 Event
		if err := d.Decode(out, &e2); err != nil {
			t.Fatalf("decoding what was encoded: %v\n%s", err, out)
		}
		if again := Append(nil, &e2); !bytes.Equal(again, out) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
	})
}

// MessageID reads what the decoder reads, escapes undone, from any event
// the encoder writes.
func FuzzMessageID(f *testing.F) {
	f.Add([]byte(`{"seq":1,"type":"message","id":"m"}`))
	f.Add([]byte(`{"seq":2,"type":"mess\u0061ge","id":"\"q\"","text":"t"}`))
	f.Add([]byte(`{"seq":3,"type":"answer","text":"t"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		MessageID(b) // never panics
		var (
			d Decoder
			e Event
		)
		if d.Decode(b, &e) != nil {
			return
		}
		out := Append(nil, &e)
		if d.Decode(out, &e) != nil {
			return // FuzzDecode's to find
		}
		raw, message, err := MessageID(out)
		if err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		id, err := UnquoteRaw(raw)
		if err != nil || message != (e.Type == TypeMessage) || (message && id != e.ID) {
			t.Fatalf("%q: message %v id %q (%v), decoded %q and %q", out, message, id, err, e.Type, e.ID)
		}
	})
}

func FuzzSeqOf(f *testing.F) {
	f.Add([]byte(`{"seq":1}`))
	f.Add([]byte(`{"a":"\"","seq":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, err := SeqOf(b)
		if err == nil && seq <= 0 {
			t.Fatalf("SeqOf(%q) = %d without error", b, seq)
		}
	})
}
