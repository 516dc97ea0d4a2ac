// Command floor is the least a warm harness can do per message, the floor
// Link Harness's cost per message is measured against in the same run
// (bench.BenchmarkMessageCPU, BENCHMARKS.md): it decodes the message's
// body, reads the conversation's last 64 KiB, posts its last 32 lines to
// the model over a kept-alive connection, reads the streamed answer,
// appends the message and the answer in one write, syncs once with
// fdatasync, and answers. Its files stay open between messages.
//
// It speaks enough of lnk-link-harness's command line and HTTP API for
// loadgen/drive.Link to drive it:
//
//	floor serve --home DIR --listen ADDR --key-file FILE
//
// with LNK_MODEL_PROXY naming the scripted model, spoken to in
// Anthropic's format. It keeps no window, no prompt, no tools, no ids: it
// is a yardstick, not a harness.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tail is how much of a conversation's end a message reads; lines is how
// many of its lines go to the model.
const (
	tail  = 64 << 10
	lines = 32
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] != "serve" {
		return errors.New("usage: floor serve --home DIR --listen ADDR --key-file FILE")
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	home := fs.String("home", "", "the folder the conversations are kept in")
	listen := fs.String("listen", "127.0.0.1:0", "the address to listen on")
	keyFile := fs.String("key-file", "", "the file holding the callers' key")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	key, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	proxy := os.Getenv("LNK_MODEL_PROXY")
	if *home == "" || proxy == "" {
		return errors.New("serve needs --home and LNK_MODEL_PROXY")
	}
	f := &floor{
		dir:   filepath.Join(*home, "chats"),
		key:   "Bearer " + strings.TrimSpace(string(key)),
		model: proxy + "/anthropic/v1/messages",
		hc:    &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}},
		chats: map[string]*chat{},
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("listening on %s\n", ln.Addr())
	hs := &http.Server{Handler: f, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-stop:
		return hs.Close()
	}
}

// floor serves messages. It is safe for concurrent use.
type floor struct {
	dir   string
	key   string
	model string
	hc    *http.Client

	mu sync.Mutex
	// guarded by mu
	chats map[string]*chat
}

// chat is one conversation's file, kept open, and its length.
type chat struct {
	mu sync.Mutex
	// guarded by mu
	f    *os.File
	size int64
	seq  int64
	buf  []byte
}

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		// A metrics page of no metrics, so what reads Link Harness's page
		// reads this one too: the floor counts nothing.
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		return
	}
	// /v1/agents/NAME/chats/THREAD/messages
	seg := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(seg) != 6 || seg[0] != "v1" || seg[3] != "chats" || seg[5] != "messages" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != f.key {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var m struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	thread := seg[4]
	c, err := f.chat(thread)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	text, err := f.turn(c, m.Text)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		Thread string `json:"thread"`
		Seq    int64  `json:"seq"`
		Text   string `json:"text"`
	}{thread, c.seq, text})
}

// chat returns thread's conversation, opening its file the first time.
func (f *floor) chat(thread string) (*chat, error) {
	if thread == "" || strings.ContainsAny(thread, `/\`) || thread[0] == '.' {
		return nil, fmt.Errorf("thread %q: not a name", thread)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.chats[thread]; ok {
		return c, nil
	}
	file, err := os.OpenFile(filepath.Join(f.dir, thread+".jsonl"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	c := &chat{f: file, size: fi.Size(), buf: make([]byte, tail)}
	f.chats[thread] = c
	return c, nil
}

// line is one line of a conversation's file.
type line struct {
	Seq  int64  `json:"seq"`
	Role string `json:"role"`
	Text string `json:"text"`
}

// turn answers text in c: the last lines read, the model asked, both
// appended and synced.
func (f *floor) turn(c *chat, text string) (string, error) {
	from := max(c.size-tail, 0)
	n, err := c.f.ReadAt(c.buf[:c.size-from], from)
	if err != nil && err != io.EOF {
		return "", err
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var msgs []message
	last := bytes.Split(bytes.TrimSpace(c.buf[:n]), []byte{'\n'})
	if from > 0 && len(last) > 0 {
		last = last[1:] // the first may be cut
	}
	for _, b := range last[max(len(last)-lines, 0):] {
		var l line
		if len(b) == 0 || json.Unmarshal(b, &l) != nil {
			continue
		}
		msgs = append(msgs, message{l.Role, l.Text})
	}
	msgs = append(msgs, message{"user", text})
	body, err := json.Marshal(map[string]any{"model": "floor", "max_tokens": 1024, "stream": true, "messages": msgs})
	if err != nil {
		return "", err
	}
	answer, err := f.ask(body)
	if err != nil {
		return "", err
	}
	var out []byte
	for _, l := range []line{{c.seq + 1, "user", text}, {c.seq + 2, "assistant", answer}} {
		b, _ := json.Marshal(l)
		out = append(append(out, b...), '\n')
	}
	if _, err := c.f.WriteAt(out, c.size); err != nil {
		return "", err
	}
	if err := syscall.Fdatasync(int(c.f.Fd())); err != nil {
		return "", err
	}
	c.size += int64(len(out))
	c.seq += 2
	return answer, nil
}

// ask posts body to the model and returns the text of its streamed answer.
func (f *floor) ask(body []byte) (string, error) {
	req, err := http.NewRequest(http.MethodPost, f.model, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := f.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("model: %s", resp.Status)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		text.WriteString(ev.Delta.Text)
		if ev.Type == "message_stop" {
			break
		}
	}
	io.Copy(io.Discard, resp.Body)
	return text.String(), sc.Err()
}
