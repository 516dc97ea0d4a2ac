package chatdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
)

// ErrNoOpener comes from Find when a folder's first event must be read to
// tell whose the folder is, and Find was given no opener to read it with.
var ErrNoOpener = errors.New("chatdir: no opener to read a conversation with")

// Find returns the path of the folder of agent a's home that holds
// thread's conversation, or would hold it were it begun now: the folder
// home.ThreadDir names, unless that one is not there and the folder the
// rule before named is, its first event naming thread. open opens a
// folder's conversation to read it, as turn.Opener does with an empty
// kind; it is called only to read the first event of a folder of the rule
// before. A name the rule refuses is home.ErrBadName.
func Find(ctx context.Context, a home.Agent, thread string, open func(dir, kind string) (store.Conversation, error)) (string, error) {
	dir, err := a.Path(home.Chat, thread)
	if err != nil {
		return "", err
	}
	name, ok := home.FormerThreadDir(thread)
	if !ok {
		return dir, nil
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return dir, nil // there, or not to be read: its opener says why
	}
	former, err := a.ChatDir(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(former); err != nil {
		return dir, nil
	}
	first, err := firstThread(ctx, former, open)
	if err != nil {
		return "", fmt.Errorf("chatdir: which folder holds %q: %s: %w", thread, former, err)
	}
	if first == thread {
		return former, nil
	}
	return dir, nil
}

// firstThread returns the thread the first event of the conversation in
// folder dir names, or "" when it holds none.
func firstThread(ctx context.Context, dir string, open func(dir, kind string) (store.Conversation, error)) (string, error) {
	if open == nil {
		return "", ErrNoOpener
	}
	conv, err := open(dir, "")
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer conv.Close()
	var (
		thread string
		derr   error
	)
	err = conv.Read(ctx, 1, store.Forward, func(_ int64, ev []byte) bool {
		var (
			dec event.Decoder
			e   event.Event
		)
		derr = dec.Decode(ev, &e)
		thread = e.Thread
		return false
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err == nil {
		err = derr
	}
	return thread, err
}
