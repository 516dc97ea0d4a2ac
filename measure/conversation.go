package measure

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store/event"
)

// Thread is the conversation every agent is sent its messages in. Its
// folder name is the same as the name, so a conversation written ahead is
// the one the harness reads.
const Thread = "measure-1"

// conversationPath is where the log of thread lives in the agent's home
// dir: in the folder its name makes (FORMATS.md, "An agent's home"), as
// the harness reads it.
func conversationPath(dir, thread string) (string, error) {
	return home.Agent{Dir: dir}.Path(home.ChatEvents, thread)
}

// windowBlock is how many events apart the written conversation's window
// checkpoints move: each answer's window starts at the message one to two
// blocks back, as a harness dropping old turns at fixed points would write.
const windowBlock = 32

// Texts of the written conversation, long enough that each event is about
// 600 bytes, as a chat's short turns are.
var (
	messageText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10)[:400]
	answerText  = strings.Repeat("A lazy dog lies under the quick brown fox. ", 10)[:280]
)

// AppendConversation appends n events of a conversation of thread to dst,
// one JSON line each, as a long-lived conversation holds them: messages at
// odd seqs and answers at even ones, a minute apart and ending before now,
// the first carrying the thread's name, each answer with its usage and its
// window's checkpoint.
func AppendConversation(dst []byte, thread string, n int, now time.Time) []byte {
	start := now.Add(-time.Duration(n+1) * time.Minute).UTC()
	var e event.Event
	for seq := int64(1); seq <= int64(n); seq++ {
		e.Reset()
		e.Seq = seq
		e.Time = start.Add(time.Duration(seq) * time.Minute)
		if seq == 1 {
			e.Thread = thread
		}
		if seq%2 == 1 {
			e.Type = event.TypeMessage
			e.ID = "pre-" + strconv.FormatInt(seq, 10)
			e.From = event.Sender{ID: "u1", Name: "Owner"}
			e.Owner = true
			e.Connection = "measure"
			e.Head = e.Time.Format("Mon 2 Jan 2006 15:04") + ", measure, Owner"
			e.Text = messageText
		} else {
			e.Type = event.TypeAnswer
			e.Text = answerText
			e.Model = "scripted/ok"
			e.Provider = "anthropic"
			e.ResponseID = "msg_pre_" + strconv.FormatInt(seq, 10)
			e.Usage = event.Usage{Input: 1200, Output: 120, CacheRead: 1000}
			e.LatencyMS = 1
			ws := (seq-1)/windowBlock*windowBlock - windowBlock + 1
			if ws < 1 {
				ws = 1
			}
			e.Window = &event.Window{
				Start:        ws,
				StartTime:    start.Add(time.Duration(ws) * time.Minute),
				TokensBefore: (ws - 1) * 150,
			}
		}
		dst = event.Append(dst, &e)
		dst = append(dst, '\n')
	}
	return dst
}

// writeConversation writes events, AppendConversation's lines, as the log
// of thread in home.
func writeConversation(home, thread string, events []byte) error {
	path, err := conversationPath(home, thread)
	if err != nil {
		return fmt.Errorf("measure: conversation of %s: %w", home, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("measure: conversation of %s: %w", home, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("measure: conversation of %s: %w", home, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.Write(events); err != nil {
		f.Close()
		return fmt.Errorf("measure: writing %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("measure: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("measure: writing %s: %w", path, err)
	}
	return nil
}
