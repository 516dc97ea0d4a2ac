package server

import (
	"encoding/json"
	"strings"
	"testing"

	"lnk.dev/linkharness/store/event"
)

func TestParseMessageBody(t *testing.T) {
	text := func(s string) *string { return &s }
	for _, tc := range []struct {
		name, in string
		want     messageBody
		says     string // in the error; "" for none
	}{
		{"all", `{"id":"m1","text":"hi","from":{"id":"u7","name":"Ann"},"owner":true,"connection":"telegram"}`,
			messageBody{ID: "m1", Text: text("hi"), From: event.Sender{ID: "u7", Name: "Ann"}, Owner: true, Connection: "telegram"}, ""},
		{"text alone", `{"text":"hi"}`, messageBody{Text: text("hi")}, ""},
		{"no text", `{"id":"1"}`, messageBody{ID: "1"}, ""},
		{"null is missing", `{"text":"hi","id":null,"from":null,"owner":null}`, messageBody{Text: text("hi")}, ""},
		{"escapes", `{"text":"a\"b\u00e9\n"}`, messageBody{Text: text("a\"bé\n")}, ""},
		{"the last of a key twice", `{"text":"one","text":"two"}`, messageBody{Text: text("two")}, ""},
		{"not UTF-8", "{\"text\":\"a\xffb\"}", messageBody{Text: text("a\uFFFDb")}, ""},
		{"spaces", " {\n \"text\" : \"hi\" } ", messageBody{Text: text("hi")}, ""},
		{"malformed", `{"text":`, messageBody{}, "cannot parse"},
		{"trailing", `{"text":"hi"} x`, messageBody{}, "unexpected tail"},
		{"not valid JSON", "{\"text\":\"a\x01b\"}", messageBody{}, "not valid JSON"},
		{"not an object", `["hi"]`, messageBody{}, "not a JSON object"},
		{"unknown field", `{"txt":"hi"}`, messageBody{}, `unknown field "txt"`},
		{"unknown in from", `{"text":"hi","from":{"id":"u","role":"x"}}`, messageBody{}, `unknown field "role" in "from"`},
		{"text a number", `{"text":1}`, messageBody{}, `"text" is a number, want a string`},
		{"owner a string", `{"text":"hi","owner":"yes"}`, messageBody{}, `"owner" is a string, want true or false`},
		{"from a string", `{"text":"hi","from":"ann"}`, messageBody{}, `"from" is a string, want an object`},
		{"from.name an array", `{"text":"hi","from":{"name":[]}}`, messageBody{}, `"from.name" is an array, want a string`},
	} {
		got, err := parseMessageBody([]byte(tc.in))
		if tc.says != "" {
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.says)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if (got.Text == nil) != (tc.want.Text == nil) || (got.Text != nil && *got.Text != *tc.want.Text) {
			t.Errorf("%s: text %v, want %v", tc.name, got.Text, tc.want.Text)
		}
		got.Text, tc.want.Text = nil, nil
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

var typicalBody = []byte(`{"id":"m-000123","text":"What is on my calendar tomorrow, and can you move the 3pm?","from":{"id":"u7","name":"Ann"},"owner":true,"connection":"telegram"}`)

// A body costs the strings it hands out and the text's pointer.
func TestParseMessageBodyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets run without the race detector")
	}
	const budget = 7
	if n := testing.AllocsPerRun(100, func() { parseMessageBody(typicalBody) }); n > budget {
		t.Errorf("parsing a typical body allocates %.0f times, over %d", n, budget)
	}
}

// What is taken from a body reads the same once written back as JSON.
func FuzzParseMessageBody(f *testing.F) {
	f.Add(typicalBody)
	f.Add([]byte(`{"text":"a\u00e9","from":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := parseMessageBody(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(map[string]any{"id": b.ID, "text": b.Text, "owner": b.Owner, "connection": b.Connection,
			"from": map[string]string{"id": b.From.ID, "name": b.From.Name}})
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseMessageBody(out)
		if err != nil || again.ID != b.ID || again.From != b.From || again.Owner != b.Owner || again.Connection != b.Connection ||
			(again.Text == nil) != (b.Text == nil) || (b.Text != nil && *again.Text != *b.Text) {
			t.Fatalf("%q: %+v, then from %s: %+v, %v", data, b, out, again, err)
		}
	})
}

func BenchmarkParseMessageBody(b *testing.B) {
	body := typicalBody
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseMessageBody(body); err != nil {
			b.Fatal(err)
		}
	}
}
