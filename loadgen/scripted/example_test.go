package scripted_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strings"

	"lnk.dev/linkharness/loadgen/scripted"
)

// The scripted model serves on a free loopback port; a request in
// Anthropic's Messages format, not streamed, is answered as the first rule
// matching its last user text says, and a request no rule matches gets
// the default answer: "ok: " and a digest of that text.
func Example() {
	script, err := scripted.ParseScript([]byte(`
[[rule]]
match = "weather"
text = "Sunny. You asked: {text}"
`))
	if err != nil {
		log.Fatal(err)
	}
	srv, addr, err := scripted.Listen("127.0.0.1:0", script)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background())

	for _, text := range []string{"What is the weather in Oslo?", "hello"} {
		body := `{"model":"claude-opus-5-5","max_tokens":1024,"messages":[{"role":"user","content":` + quote(text) + `}]}`
		resp, err := http.Post("http://"+addr.String()+"/anthropic/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		var answer struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StopReason string `json:"stop_reason"`
		}
		err = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s: %q (%s)\n", resp.Status, answer.Content[0].Type, answer.Content[0].Text, answer.StopReason)
	}
	// Output:
	// 200 OK text: "Sunny. You asked: What is the weather in Oslo?" (end_turn)
	// 200 OK text: "ok: 4f9f2cab" (end_turn)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
