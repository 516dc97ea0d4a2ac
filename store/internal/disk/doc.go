// Package disk is the filesystem the stores that keep a conversation in
// files (the log and compact) go through: every open, read, write, sync,
// truncate, directory sync and flock they make is a call on an FS or a
// File, so a test can stand another filesystem in the real one's place.
//
// OS is the real one. Mem is a crashable one in memory: it keeps only what
// was synced when it crashes (Mem.Crash), can fail any operation (Plan),
// a failed Sync dropping what it was to make durable or, as Linux's page
// cache does, keeping it readable and never durable unless written again
// (Plan.Keep), and calls a test after each (Mem.OnOp), so crash and fault
// tests stop a
// store at every write, sync and truncate exactly, with no process killed
// and no clock. Package disktest runs those tests on any such store: crash
// images at every operation, and every operation failed in turn.
//
// The stores rename nothing: a new file is made by opening it with
// os.O_CREATE and made durable by SyncDir on its folder.
package disk
