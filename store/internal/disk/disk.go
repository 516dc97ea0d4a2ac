package disk

import (
	"context"
	"io/fs"

	"lnk.dev/linkharness/store/durable"
)

// FS opens files and makes their names durable.
type FS interface {
	// OpenFile opens name with flag, one of os.O_RDONLY, os.O_RDWR|os.O_CREATE
	// and os.O_WRONLY|os.O_APPEND|os.O_CREATE, creating the file with perm.
	// A missing file opened without os.O_CREATE is an error wrapping
	// fs.ErrNotExist.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)

	// Stat says what name is; a missing name is an error wrapping
	// fs.ErrNotExist.
	Stat(name string) (fs.FileInfo, error)

	// SyncDir makes the names in the folders dirs durable, in one wait
	// when the filesystem allows: a file or folder created in one
	// survives a crash only once SyncDir has returned.
	SyncDir(dirs ...string) error

	// Committer is the filesystem's group commit: the one every
	// conversation kept on it in this process shares (see durable.Committer).
	Committer() *durable.Committer
}

// File is an open file. It is for one goroutine at a time.
type File interface {
	Name() string
	ReadAt(b []byte, off int64) (int, error)
	WriteAt(b []byte, off int64) (int, error)
	// Write appends, for a file opened with os.O_APPEND.
	Write(b []byte) (int, error)
	Truncate(size int64) error

	// Sync makes the file's data and size durable (fdatasync). After it
	// fails, nothing written since the last good Sync may be trusted: the
	// caller closes the file and opens it again. Nor may what it reads
	// back be synced again and trusted: Linux may keep the bytes readable
	// and mark them written though they are not on the disk, so what is
	// to be made durable is written again.
	Sync() error

	// SyncFS makes durable the data and size of every file of the
	// filesystem this file is on (syncfs(2)), its own among them. Linux's
	// makes new names durable too, but a store does not count on it: a
	// name needs SyncDir (Mem's SyncFS keeps none). It fails as Sync does, for any of
	// them, and after it fails nothing written to any of them since its
	// last good sync may be trusted (see durable.Committer).
	SyncFS() error

	// Device says which filesystem the file is on: files with the same
	// Device are synced together by one SyncFS.
	Device() uint64

	// Stat returns the file's size and a stamp that changes whenever its
	// data or size does, so a reader can tell it read a file that did not
	// change under it.
	Stat() (Info, error)

	// Lock takes the file's flock, exclusive or shared. A flock belongs to
	// the open file: it serializes holders in one process and across
	// processes, and goes when its holder closes the file or dies. Without
	// a deadline or cancellation on ctx it waits as long as it takes.
	Lock(ctx context.Context, exclusive bool) error
	// Unlock lets go of the flock.
	Unlock()

	Close() error
}

// Info is what File.Stat returns: no allocation, so a read may take it
// twice.
type Info struct {
	Size    int64
	Changed int64 // the status change time in nanoseconds, or a counter
}
