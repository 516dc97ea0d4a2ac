package tools

import (
	"context"
	"testing"
)

// BenchmarkCall is the cost of one call on a kept session to a tool that
// does nothing (echo on an in-process mcp-go server over streamable HTTP):
// the harness's own cost per call, with the loopback HTTP and the server's
// decoding in it, and no time of the tool's own.
func BenchmarkCall(b *testing.B) {
	ts := newTestServer(b, "")
	benchEcho(b, ts.URL, "t", `{"text":"x"}`)
}

// benchEcho times calls to echo, with args, in conversation thread, on a
// kept session (memory's) to the server at url, its first call made
// before the timing starts.
func benchEcho(b *testing.B, url, thread, args string) {
	ctx := context.Background()
	_, tr := begin(b, ctx, newAgent(b), []Server{{Name: "memory", URL: url}}, Options{})
	tr.Call(ctx, thread, "memory__echo", []byte(args))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := tr.Call(ctx, thread, "memory__echo", []byte(args)); r.Error != "" {
			b.Fatal(r.Error)
		}
	}
}

// BenchmarkFirstCall is a turn's first call to a tool: on a kept session
// (memory's), and on a fresh one (a tool whose session ends with its turn:
// initialize, tools/list, the call, and the session's end).
func BenchmarkFirstCall(b *testing.B) {
	for _, c := range []struct{ name, tool string }{{"kept", "memory"}, {"fresh", "web"}} {
		b.Run(c.name, func(b *testing.B) {
			ts := newTestServer(b, "")
			set := New(newAgent(b), []Server{{Name: c.tool, URL: ts.URL}}, Options{})
			defer set.Close()
			ctx := context.Background()
			tr, _ := set.Begin(ctx, nil)
			tr.Call(ctx, "t", c.tool+"__echo", []byte(`{"text":"x"}`))
			tr.End()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				tr, err := set.Begin(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if r := tr.Call(ctx, "t", c.tool+"__echo", []byte(`{"text":"x"}`)); r.Error != "" {
					b.Fatal(r.Error)
				}
				tr.End()
			}
		})
	}
}
