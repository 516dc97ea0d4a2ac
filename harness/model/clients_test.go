package model

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestClients(t *testing.T) {
	_, base := serve(t, nil)
	env := map[string]string{"LNK_MODEL_PROXY": base}
	getenv := func(k string) string { return env[k] }
	msg := &Request{Model: "m", Messages: []Message{{Role: "user", Text: "hi"}}}
	var cs Clients
	for _, provider := range providers {
		c, err := cs.Get(provider, getenv, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // the second call sends the target and header the first made
			if resp, err := c.Call(context.Background(), msg, nil); err != nil || !strings.HasPrefix(resp.Text, "ok: ") {
				t.Fatalf("%s, call %d: %v", provider, i, err)
			}
		}
		if again, _ := cs.Get(provider, getenv, nil); again != c {
			t.Errorf("%s: a client made again for the same environment", provider)
		}
	}

	first, _ := cs.Get("anthropic", getenv, nil)
	other := map[string]string{"LNK_MODEL_PROXY": base} // another agent's environment, naming the same
	if c, _ := cs.Get("anthropic", func(k string) string { return other[k] }, nil); c != first {
		t.Error("two environments naming the same proxy and key: two clients")
	}
	var none *Clients
	if a, _ := none.Get("anthropic", getenv, nil); a == nil || a == first {
		t.Errorf("a nil Clients: %#v, want a client of its own", a)
	}
	env["LNK_MODEL_PROXY_KEY"] = "k2"
	keyed, err := cs.Get("anthropic", getenv, nil)
	if err != nil || keyed == first || keyed.(*Anthropic).Key != "k2" {
		t.Errorf("another key: %v, %#v", err, keyed)
	}
	if c, _ := cs.Get("anthropic", getenv, &http.Client{}); c == keyed {
		t.Error("another http.Client: the client kept")
	}
	if _, err := cs.Get("gemini", getenv, nil); err == nil {
		t.Error("an unknown provider is accepted")
	}

	env["LNK_MODEL_PROXY"] = "http://[::1"
	bad, err := cs.Get("openai", getenv, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the target's error is kept, and said each call
		if _, err := bad.Call(context.Background(), msg, nil); err == nil || !strings.HasPrefix(err.Error(), "model: openai: parse ") {
			t.Errorf("a base URL that does not parse: %v", err)
		}
	}
}

func TestStallOf(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want time.Duration
	}{
		{"", DefaultStall},
		{"90s", 90 * time.Second},
		{"250ms", 250 * time.Millisecond},
		{"0s", DefaultStall},   // no stall is not a stall of none
		{"-5s", DefaultStall},  // nor a negative one
		{"soon", DefaultStall}, // not a duration
	} {
		if got := StallOf(func(string) string { return tt.env }); got != tt.want {
			t.Errorf("LNK_MODEL_STALL=%q: %v, want %v", tt.env, got, tt.want)
		}
	}
}
