// Package durable is the one way Link Harness replaces a file whole and
// makes a folder's names survive a machine's crash: the stores that keep a
// conversation in files sync their folders through it (store/internal/disk's
// real filesystem), and the harness writes an agent's settings, tool lists
// and other files with it.
//
// A file is replaced through a temporary file beside it, named
// .<name>.<random>, written, synced and renamed into place, then its folder
// synced: a reader finds the old file or the new one whole, and after a
// crash it is one of them. ReplaceFile is the same without either sync,
// for files made again when missing. A folder made with MakeDirDeferred has
// its parents' names synced into theirs, as a file's name needs its folder
// synced, and its own left to its first writer's SyncDir of it and its
// parent together.
//
// Every folder sync goes through the process's Committer (OS), group
// commit: the stores' fdatasyncs go through it too, so the writers and new
// folders and files that sync at once, as many new conversations' first
// turns do under load, share one syncfs; alone, each pays its own sync.
//
// Each call uses package os's files: it is not for a hot path that counts
// system calls. Its one state is the Committer, so any number of
// goroutines may call it at once (a file replaced by two at once ends as
// one of them).
//
// It imports nothing of Link Harness's, so both the stores and the harness
// may.
package durable
