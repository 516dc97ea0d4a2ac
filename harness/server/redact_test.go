package server

import "testing"

func TestRedact(t *testing.T) {
	home := "/home/ada/.lnk/agents/ada"
	proxies := []string{"http://127.0.0.1:39985/", "https://user:secret@proxy.example:8443/v1", "http://proxy"}
	for _, tt := range []struct{ in, want string }{
		{"nothing to hide", "nothing to hide"},
		{"log: append seq 3 to /home/ada/.lnk/agents/ada/chats/t/events.jsonl: store: seq taken by the line at offset 456",
			"log: append seq 3 to <home>/chats/t/events.jsonl: store: seq taken by the line at offset 456"},
		{"the copy for people: open /home/ada/.lnk/agents/ada/chats/t/chat.md: read-only file system",
			"the copy for people: open <home>/chats/t/chat.md: read-only file system"},
		{`model: anthropic: Post "http://127.0.0.1:39985/anthropic/v1/messages": read tcp 127.0.0.1:46612->127.0.0.1:39985: read: connection reset by peer`,
			`model: anthropic: Post "<model proxy>/anthropic/v1/messages": read tcp 127.0.0.1:46612-><model proxy>: read: connection reset by peer`},
		{`Post "https://user:secret@proxy.example:8443/v1/messages": EOF`, `Post "<model proxy>/messages": EOF`},
		{"dial tcp proxy.example:8443: connection refused", "dial tcp <model proxy>: connection refused"},
		{"a bare host name stays: no model proxy", "a bare host name stays: no model proxy"},
		{`Post "http://proxy/openai/v1/chat/completions": EOF`, `Post "<model proxy>/openai/v1/chat/completions": EOF`},
		{"/home/ada/.lnk/agents/ada and /home/ada/.lnk/agents/ada/x", "<home> and <home>/x"},
	} {
		if got := redact(tt.in, home, proxies); got != tt.want {
			t.Errorf("redact(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
	if got := redact("/ stays", "/", nil); got != "/ stays" {
		t.Errorf("a home of / took out %q", got)
	}
}
