package turn_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/loadgen/scripted"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// A turn: a Runner for an agent whose home is a fresh folder, its model
// the scripted one (a server speaking the providers' wire formats, here in
// this process), answers one message. The message is the conversation's
// first event and the answer its second.
func Example() {
	model, addr, err := scripted.Listen("127.0.0.1:0", &scripted.Script{Rules: []scripted.Rule{{Text: "Hello, Ada: nothing is on today."}}})
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	root, err := os.MkdirTemp("", "lnk-home")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	agent := home.Agent{Name: "ada", Dir: filepath.Join(root, "ada")}
	if err := os.Mkdir(agent.Dir, 0o700); err != nil {
		log.Fatal(err)
	}
	env := map[string]string{"LNK_MODEL_PROXY": "http://" + addr.String()}
	r := &turn.Runner{
		Agent:  agent,
		Getenv: func(k string) string { return env[k] },
		HTTP:   &http.Client{},
		// Every conversation kept as a log (events.jsonl); the programs
		// choose among the ways of keeping one in a switch of their own.
		Open: func(dir, kind string) (store.Conversation, error) { return eventlog.Open(dir) },
	}

	m := turn.Message{ID: "m-1", Text: "What is on today?", From: event.Sender{ID: "ada", Name: "Ada"}, Owner: true}
	a, err := r.Message(context.Background(), "web:1", m, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Text)
	fmt.Println("seq", a.Seq)
	// Output:
	// Hello, Ada: nothing is on today.
	// seq 2
}
