package warm

import (
	"time"

	"golang.org/x/sys/unix"
	"lnk.dev/linkharness/harness/chatcopy"
	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/idempotency"
	"lnk.dev/linkharness/store"
)

// Conv is what a turn left of its conversation for the next. A turn holds
// it alone while it runs, taken out of its Cache; it sets the exported
// fields, what it found of the conversation, and hands the rest over
// through the methods, each of which on a nil *Conv keeps nothing.
type Conv struct {
	Conv        store.Conversation // open, its lease and lock let go
	Last        int64              // the conversation's last seq as the turn left it
	Folder      Folder             // the folder as the turn left it
	StartConn   string             // what open read of the first event: its connection,
	CacheThread string             // and the thread whose cache key its requests carry
	// NoToolsFile is set when the folder held no tools.json as the turn
	// left it: only a turn, which appends to the conversation, makes one,
	// so while the conversation and its folder are as that turn left them
	// there is still none, and its next turn need not look.
	NoToolsFile bool

	dir    string   // the conversation's folder
	files  files    // the files beside the events, open
	events events   // the window's events, decoded
	msgs   messages // the model's messages made of them, and their bytes

	used  uint64    // when it was put back, by its Cache's count of puts
	at    time.Time // and by its clock
	bytes int       // what it holds, about
}

// files are the files beside a conversation's events kept open.
type files struct {
	dirFD   int  // the folder, open and unlocked, whose flock the next turn takes,
	dirOpen bool // when this is set
	told    idempotency.Told
	ids     *idempotency.Index // through Last; nil when not kept
	copy    chatcopy.File
	home    *home.Hold // the agent's home, held while this is kept; nil: not held
}

// Folder tells a conversation's folder and its version: a name made,
// removed or renamed in it changes its times.
type Folder struct {
	dev, ino     uint64
	mtime, ctime int64
}

// FolderOf is the Folder of a folder whose stat is st.
func FolderOf(st *unix.Stat_t) Folder {
	return Folder{dev: st.Dev, ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// SetFirst records what open read of the conversation's first event, for
// the next turn.
func (c *Conv) SetFirst(conn, cacheThread string) {
	if c != nil {
		c.StartConn, c.CacheThread = conn, cacheThread
	}
}

// Close closes c's conversation and the files kept with it.
func (c *Conv) Close() {
	if c.Conv != nil {
		c.Conv.Close()
		c.Conv = nil
	}
	c.CloseFiles()
}

// CloseFiles closes the files kept with c's conversation.
func (c *Conv) CloseFiles() {
	if c == nil {
		return
	}
	f := &c.files
	if f.dirOpen {
		unix.Close(f.dirFD)
	}
	f.dirFD, f.dirOpen = 0, false
	f.told.Close()
	f.ids.Discard() // see idempotency.Index: another turn may have written it since
	f.ids = nil
	f.copy.Close()
	if f.home != nil {
		f.home.Drop()
		f.home = nil
	}
}

// TakeDir takes the folder kept open: -1 when none is.
func (c *Conv) TakeDir() int {
	fd := c.files.dirFD
	if !c.files.dirOpen {
		fd = -1
	}
	c.files.dirFD, c.files.dirOpen = 0, false
	return fd
}

// KeepDir keeps the folder open as fd, its flock let go, for the next
// turn to take the flock again on it.
func (c *Conv) KeepDir(fd int) { c.files.dirFD, c.files.dirOpen = fd, true }

// TakeIDs takes the id index the turn before left open: nothing changed
// since, so it holds every message through the last seq. Nil when none
// was kept.
func (c *Conv) TakeIDs() *idempotency.Index {
	if c == nil {
		return nil
	}
	x := c.files.ids
	c.files.ids = nil
	if x != nil {
		x.Kept()
	}
	return x
}

// KeepIDs keeps the id index x open, through Last.
func (c *Conv) KeepIDs(x *idempotency.Index) { c.files.ids = x }

// TakeTold takes the told file kept open; the zero Told when none was.
func (c *Conv) TakeTold() idempotency.Told { return takeFile(c, toldFile) }

// KeepTold keeps the told file f open for the next turn; with nothing
// kept (nil), closes it.
func (c *Conv) KeepTold(f idempotency.Told) {
	if !keepFile(c, toldFile, f) {
		f.Close()
	}
}

// TakeCopy takes the copy for people the turn before kept open; the zero
// chatcopy.File when none was.
func (c *Conv) TakeCopy() chatcopy.File { return takeFile(c, copyFile) }

// KeepCopy keeps the copy for people f open for the next turn; with
// nothing kept (nil), closes it.
func (c *Conv) KeepCopy(f chatcopy.File) {
	if !keepFile(c, copyFile, f) {
		f.Close()
	}
}

// toldFile and copyFile say where in files each file is kept.
func toldFile(f *files) *idempotency.Told { return &f.told }
func copyFile(f *files) *chatcopy.File    { return &f.copy }

// takeFile takes the file kept where at says in c's files, leaving the
// zero value there, so that closing c's files leaves the taken one open;
// the zero value when c is nil.
func takeFile[F any](c *Conv, at func(*files) *F) F {
	var f F
	if c != nil {
		p := at(&c.files)
		f, *p = *p, f
	}
	return f
}

// keepFile keeps f where at says in c's files for the next turn, and says
// whether it did: with nothing kept (c nil) it does not, and the file is
// the caller's to close.
func keepFile[F any](c *Conv, at func(*files) *F, f F) bool {
	if c == nil {
		return false
	}
	*at(&c.files) = f
	return true
}

// HoldHome holds the agent's home, held already by the turn, while c is
// kept: once, however many turns keep c.
func (c *Conv) HoldHome(h *home.Hold) {
	if c.files.home == nil {
		c.files.home = h
		h.Ref()
	}
}
