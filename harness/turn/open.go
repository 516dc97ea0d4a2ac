package turn

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/chatdir"
	"lnk.dev/linkharness/harness/prompt"
	"lnk.dev/linkharness/harness/warm"
	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/durable"
	"lnk.dev/linkharness/store/event"
)

// folderLock is how the turn holds its conversation: the lease its store
// keeps, or, for a store that keeps none, its folder's flock.
type folderLock struct {
	release func() // lets go of what was taken (see hold)
	fd      int    // the conversation's folder, open and flocked, while locked
	locked  bool
	keepDir bool // the folder stays open when its flock is let go, for the next turn
}

// Opener opens the conversation kept in folder dir, which exists. What the
// folder holds says how it is kept (a store.<driver> marker, events.zst, or
// else the log); kind, the spec's [storage] conversations, says only how a
// conversation with nothing in it yet starts, and a kind it does not know
// is an error naming the kinds, never another way. An empty kind opens the
// conversation to read it: a folder holding none is store.ErrNotFound. The
// programs wire the ways of keeping a conversation in one switch.
type Opener func(dir, kind string) (store.Conversation, error)

// ErrNoOpener comes when a Runner has no Opener: it cannot reach any
// conversation.
var ErrNoOpener = errors.New("turn: the runner has no Opener for its conversations")

// open opens the conversation, takes its lease where its store keeps
// leases, and checks its folder holds this thread; or takes it as its
// last turn in this process left it, when nothing changed since (see
// package warm).
func (t *turn) open(ctx context.Context, kind string) error {
	if w := t.r.Warm.Take(t.r.Agent.Name, t.thread, t.dir); w != nil {
		if ok, err := t.openWarm(ctx, w); ok || err != nil {
			return err
		}
	}
	// Its name is made durable by its store with its first event
	// (durable.MakeDirDeferred), whoever made it: a maker that died
	// first left no event.
	if _, err := durable.MakeDirDeferred(t.dir); err != nil {
		return err
	}
	if t.r.Open == nil {
		return ErrNoOpener
	}
	conv, err := t.r.Open(t.dir, kind)
	t.r.storeOpened(err)
	if err != nil {
		return err
	}
	if err := t.hold(ctx, conv, -1); err != nil {
		return err
	}
	t.warm.kept = t.r.Warm.New(t.dir, conv)
	if t.last == 0 {
		return nil
	}
	var first string
	err = t.conv.Read(ctx, 1, store.Forward, func(_ int64, ev []byte) bool {
		t.read += int64(len(ev))
		var e event.Event
		if err := t.dec.Decode(ev, &e); err == nil {
			first, t.comp.startConn = e.Thread, e.Connection
			t.comp.cacheThread = prompt.CacheThreadOf(e.Extra)
		}
		return false
	})
	if err != nil {
		return err
	}
	if first != t.thread {
		return fmt.Errorf("%w: %q holds %q, not %q", ErrThreadClash, t.dir, first, t.thread)
	}
	t.warm.kept.SetFirst(t.comp.startConn, t.comp.cacheThread)
	return nil
}

// openWarm takes the conversation from what its last turn in this process
// left, w, when nothing changed since: its lease and lock taken again (on
// the folder it kept open), its last seq the one that turn left, its
// folder's path naming the folder it left, with the same times. It reports
// false, w let go of and nothing held, when something changed: the
// conversation is opened afresh.
func (t *turn) openWarm(ctx context.Context, w *warm.Conv) (bool, error) {
	conv, fd := w.Conv, w.TakeDir()
	w.Conv = nil // the turn's: closed when it ends unless kept again
	if err := t.hold(ctx, conv, fd); err != nil {
		w.Close()
		return false, err
	}
	if folder, err := t.folderAt(); t.last != w.Last || err != nil || folder != w.Folder {
		t.log().Debug("the conversation changed since its last turn here: composed afresh", "seq", t.last, "kept", w.Last)
		t.lock.release()
		t.conv.Close()
		t.conv, t.lock.release, t.last = nil, nil, 0
		w.Close() // the files kept with it
		return false, nil
	}
	w.Conv = conv
	t.warm.kept = w
	t.warm.folder, t.warm.taken = w.Folder, true
	t.comp.startConn, t.comp.cacheThread = w.StartConn, w.CacheThread
	return true, nil
}

// hold takes conv's lease where its store keeps leases, else the folder's
// lock, on dirFD when it is not -1 (the folder as the turn before kept it
// open), and reads its last seq. Held or not, t.conv is conv held and
// t.lock.release lets go of what was taken: it closes the folder, or only
// unlocks it when the turn keeps it (keepDir).
func (t *turn) hold(ctx context.Context, conv store.Conversation, dirFD int) error {
	// The lease before anything is read, so what the turn reads of the
	// conversation is what it appends after: another process's turn holds
	// it until its own ends. A store without leases is returned as it is.
	held, release, err := store.HoldLease(ctx, conv, "turn", store.LeaseTTL)
	if err != nil {
		conv.Close()
		if dirFD >= 0 {
			unix.Close(dirFD)
		}
		return err
	}
	t.conv, t.lock.release = held, release
	if _, leased := held.(*store.Leased); !leased {
		// A store that keeps no lease (the log, compact) is kept in this
		// folder, so the folder's flock is its lease: a turn of another
		// process on this home waits for this one to end, rather than
		// appending between its message and its answer.
		fd := dirFD
		if fd < 0 {
			if fd, err = chatdir.OpenFolder(t.dir); err != nil {
				return err
			}
		}
		if err := chatdir.Lock(ctx, t.ops.caller, fd, t.dir, ErrBusy); err != nil {
			unix.Close(fd)
			return err
		}
		t.lock.fd, t.lock.locked = fd, true
		t.lock.release = func() {
			t.lock.locked = false
			if !t.lock.keepDir || unix.Flock(fd, unix.LOCK_UN) != nil {
				unix.Close(fd)
				t.lock.keepDir = false
			}
			release()
		}
	} else if dirFD >= 0 {
		unix.Close(dirFD)
	}
	last := held.Last
	if h, ok := held.(store.Holder); ok && dirFD >= 0 {
		// Warm, its log there: the writers' lock now, for the message's
		// append, and the end read once under it (close lets it go).
		last = h.Hold
	}
	if t.last, err = last(ctx); err != nil {
		return err
	}
	if l, ok := held.(*store.Leased); ok && l.TookOver() != "" {
		t.log().Warn("lease taken over", "seq", t.last, "from", l.TookOver()) // seq: the last event its holder left
	}
	return nil
}

// Conversation opens thread's conversation to read it, the way its folder
// says it is kept. A thread with no folder is store.ErrNotFound.
func (r *Runner) Conversation(thread string) (store.Conversation, error) {
	dir, err := r.Folder(context.Background(), thread)
	if err != nil {
		return nil, err
	}
	return r.conversationIn(dir, thread)
}

// conversationIn opens thread's conversation in folder dir, the one Folder
// found, to read it.
func (r *Runner) conversationIn(dir, thread string) (store.Conversation, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("%w: %q", store.ErrNotFound, thread)
	}
	if r.Open == nil {
		return nil, ErrNoOpener
	}
	return r.Open(dir, "")
}

// folderNow is the conversation's folder's key as the turn holds it
// locked; the zero key for a store that keeps leases, whose folder holds
// no events.
func (t *turn) folderNow() (warm.Folder, error) {
	if !t.lock.locked {
		return warm.Folder{}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(t.lock.fd, &st); err != nil {
		return warm.Folder{}, fmt.Errorf("turn: %s: %w", t.dir, err)
	}
	return warm.FolderOf(&st), nil
}

// folderAt is the key of the folder the conversation's path names now,
// as the turn holds it locked: the folder it holds open and locked when
// the key is the one it left, for a name removed, made or renamed in it,
// or the folder itself, changes its times. The zero key for a store that
// keeps leases.
func (t *turn) folderAt() (warm.Folder, error) {
	if !t.lock.locked {
		return warm.Folder{}, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(t.dir, &st); err != nil {
		return warm.Folder{}, fmt.Errorf("turn: %s: %w", t.dir, err)
	}
	return warm.FolderOf(&st), nil
}
