package event

import (
	"reflect"
	"testing"
)

// The two decoders agree: on every input, the one-pass decoder declines, or
// it decodes the Event fastjson's tree decodes. What it declines, the tree
// decodes or refuses.
func FuzzDecodersAgree(f *testing.F) {
	f.Add(Append(nil, typicalAnswer()))
	f.Add(Append(nil, &Event{Seq: 2, Time: t0, Type: TypeAnswer, Thinking: []byte(`[{"thinking":"hm","signature":"c2ln"}]`),
		Calls: []Call{{ID: "c1", Name: "memory__search", Args: []byte(`{"q":"x"}`)}}}))
	f.Add([]byte(`{"seq":8,"type":"message","x_future":{"a":[1,2.50]},"text":"hi"}`))
	f.Add([]byte(`{"seq":9,"type":"message","text":"a","text":"b"}`))
	f.Add([]byte(`{"seq":10,"type":"message","from":{"id":"a","id":"b"}}`))
	f.Add([]byte(`{"seq":11,"type":"answer","cost":1e400,"latency_ms":99999999999999999999}`))
	f.Add([]byte(`{"seq":12,"type":"message","text":"\u0000\u2028\ud800"}`))
	f.Add([]byte(`{"seq":13,"type":"answer","window":null,"usage":{}}`))
	f.Add([]byte(`{"seq":14,"time":"2026-02-30T10:45:01.123456789Z","type":"message"}`))
	f.Add([]byte(`{"seq":-1,"type":"message"}`))
	f.Add([]byte(`{"seq":15,"type":"message","owner":tru}`))
	f.Add([]byte("{\"seq\":16,\"type\":\"message\",\"text\":\"\xff\xfe\"}"))
	f.Add([]byte(`{"seq":1,"time":"2026-12-02T10:45:01.123456789Z","type":"message","thread":"t","id":"m\"1","from":{"id":"u7","name":"Ann \u00e9"},"owner":true,"connection":"telegram","head":"[Wed]","text":"line\none\ttab \\ \/ \u263a"}`))
	f.Add([]byte(`{"seq":3,"type":"result","call_id":"c1","name":"web__get","text":"ok","error":"","truncated":false}`))
	f.Add([]byte(`{"seq":4,"type":"summary","text":"s","through":3,"window":{"start":4,"start_time":"2026-12-02T11:45:01.123456789+01:00","tokens_before":900}}`))
	f.Add([]byte(` { "seq" : 5 , "type" : "answer" , "cost" : 1.5e-3 , "latency_ms" : -0 , "usage" : { "input" : 007 } } `))
	f.Add([]byte(`{"seq":6,"type":"answer","usage":{"input":1,"input":2}}`))
	f.Add([]byte(`{"seq":7,"type":"message","text":"\ud83d\ude00"}`))
	f.Add([]byte(`{"seq":17,"type":"answer","cost":0,"cost_source":"reported","cost_source":"priced"}`))
	f.Add([]byte(`{"seq":18,"type":"answer","cost_source":"r\u0065ported","cost":1e-7}`))
	f.Add([]byte(`{"seq":19,"type":"answer","cost_source":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var (
			d          Decoder
			fast, tree Event
		)
		if !d.decodeFast(b, &fast) {
			return
		}
		if err := d.decodeTree(b, &tree); err != nil {
			t.Fatalf("%q: decoded in one pass, refused by the tree: %v", b, err)
		}
		if !reflect.DeepEqual(fast, tree) {
			t.Fatalf("%q:\none pass %+v\nthe tree %+v", b, fast, tree)
		}
	})
}

// The events Append writes without thinking or calls are decoded in
// one pass, and the same as through the tree.
func TestDecodeFastTakes(t *testing.T) {
	var d Decoder
	for _, e := range []*Event{
		typicalAnswer(),
		{Seq: 1, Time: t0, Type: TypeMessage, Thread: "t", ID: "m1", From: Sender{ID: "u", Name: "Ann"}, Owner: true, Connection: "c", Head: "[h]", Text: "a \"quoted\"\nline\t\\ é ☺ \x01"},
		{Seq: 2, Time: t0, Type: TypeResult, CallID: "c1", Name: "web__get", Text: "ok", Error: "no", Truncated: true},
		{Seq: 3, Time: t0, Type: TypeSummary, Text: "s", Through: 2, Window: &Window{Start: 3, StartTime: t0, TokensBefore: 10}},
		{Seq: 4, Time: t0, Type: TypeAnswer, CostSource: CostReported},
		{Seq: 5, Time: t0, Type: TypeSummary, Cost: 0.25, CostSource: "other"},
	} {
		b := Append(nil, e)
		var fast, tree Event
		if !d.decodeFast(b, &fast) {
			t.Errorf("%s: not decoded in one pass", b)
			continue
		}
		if err := d.decodeTree(b, &tree); err != nil || !reflect.DeepEqual(fast, tree) {
			t.Errorf("%s:\none pass %+v\nthe tree %+v, %v", b, fast, tree, err)
		}
	}
}
