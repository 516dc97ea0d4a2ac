/*
Package log keeps a conversation as an append-only log of events in one
file, events.jsonl, in the conversation's folder: the form a person can open
and read.

# The bytes on disk

The file is a sequence of lines. Each line is one event, a JSON object as
event.Append writes it (seq first), and a '\n'. Line k holds seq k,
from 1, with no gaps and nothing else between:

	offset 0     {"seq":1,"time":"…","type":"message",…}\n
	             {"seq":2,"time":"…","type":"answer",…}\n
	             …
	             {"seq":n,…}\n
	end          (the file's size)

A line holds at most event.MaxBytes bytes before its '\n', and no '\n'
inside (JSON escapes every newline in a string). There is no header, no
checksum and no index: seqs are contiguous, so the line of any seq is found
by bisecting the file by offset, and the newest lines by reading back from
the end.

# What is torn, and what is repaired

A writer appends one line with one write call, then fdatasync. A writer that
dies, or a disk that fills, in the middle of that write leaves the file
ending with part of a line and no '\n':

	…{"seq":n,…}\n{"seq":n+1,"time":"20
	              ^ end of the last complete line: the torn tail starts here

Readers never read past the last '\n'. The next Append, under the writers'
lock, cuts the torn tail off (ftruncate to the end of the last complete
line) before writing, and first keeps the bytes it cuts in events.jsonl.torn
beside the log, for a person to look at, durably, as one record:

	# events.jsonl offset 1234, 20 bytes, cut 2026-01-02T03:04:05.123456789Z\n
	{"seq":n+1,"time":"20\n

A torn tail holds no '\n', so the record is two lines. The torn tail was
never acknowledged: its Append had not returned. If a repair is itself cut
short, the tail is still in the log and is kept again by the next one.

Anything else is corruption, reported as a *CorruptError (wrapping
store.ErrCorrupt) with the file and the offset of the line, and never
skipped: a complete line that is not an event (event.SeqOf fails, or it is
over the size limit), a line whose seq is not the one after the line before,
a file whose first line is not seq 1, or more bytes after the last '\n' than
one write makes. Reads check the lines they read, and only those; a read
forward from seq 1 hands out the lines before the damage, then reports it.

# What is damaged, and what Repair does

Damage is never repaired by a turn: only Repair (lnk agent chat repair,
with the agent stopped) cuts it. It keeps the longest run of whole lines
from the start holding seqs 1, 2, … in order, and moves every byte after it
to events.jsonl.damaged beside the log, durably, before it cuts the log, as
one record of the torn file's form whose first line also says what was
found:

	# events.jsonl offset 5678, 910 bytes, cut 2026-01-02T03:04:05Z: seq 9 where 7 was due\n
	…the bytes cut, their '\n's included…\n

A torn final line alone goes to events.jsonl.torn, as an Append would cut
it. The lines moved may hold acknowledged events: they are for a person to
look at, and nothing reads them again.

# Crashes

An Append returns once its line is durable, after an fdatasync of the
log, which makes the lines appended deferred before it durable too.
AppendDeferred (store.Deferred) writes its line and returns without a
sync: the line is read, is the conversation's last, and survives the
writer's process being killed (the kernel holds it), but a machine's
crash before the next Append or Commit returns may take it, whole or
torn. Its writer keeps the writers' lock from that line to its sync, so
no other writer's line follows it meanwhile, and tells nobody of it until
then. So a crash leaves every acknowledged line, a line whose Append or
Commit returned nil or that was before such a line, and after them at
most the lines of one writer that had not yet been acknowledged, whole or
torn (the last one only); the next Append cuts a torn one as above.

The log's name is made durable by an fsync of the folder before the first
line is written into it, by whichever writer finds it holding no line: a
writer that dies, or whose folder sync fails, before that leaves no line
for a crash to lose.

The fdatasync goes through the filesystem's durable.Committer: a writer
alone makes its own, and writers of this process that wait for one at
once, the folder syncs of new logs and conversations among them, share
one syncfs of their filesystem (group commit). A syncfs that
fails fails every writer whose unsynced lines it may have taken, those
waiting for it and those that wrote before it and sync after.

An fdatasync that fails may leave the lines it was to make durable to be
read, though they are not on the disk, and a later fdatasync that
succeeds does not put them there: Linux marks their pages written. So the
Append or Commit whose fdatasync failed cuts off every line it was to
make durable, its own and the deferred ones before it, before it lets go
of the lock, and returns the error; the retry writes them again. A reader
may have read them before the cut, as it may read any line before it is
acknowledged; a forward read that meets the cut ends there. If the cut
fails too, the lines stay: an Append that finds its own bytes at its seq
writes them again over themselves before its fdatasync, rather than
trust them.

Every file operation goes through a disk.FS, and the tests stand a
disk.Mem in the disk's place: they crash a 100-event script, its
messages appended deferred and its answers durably, after each of its
operations (so between a message written and its answer's sync too),
keeping only what was synced and, again, half of an unsynced append,
and fail each operation in turn with EIO and ENOSPC, once and from then
on, a failed fdatasync dropping what it was to make durable and, again,
keeping it readable as Linux does, checking these words at every point.

# The lock

Writers serialize with flock(2), exclusive, on events.jsonl itself: the
lock holds across processes and goes with a writer that dies. A writer
holds it for one Append, or from an AppendDeferred to the Append or
Commit that makes its line durable, or its Close. Readers take
no lock (see Read); they only read complete lines, which no writer changes.
Replacing the file by a rename while a Conversation holds it open is for a
stopped agent only (lnk agent chat convert), since the lock is on the file.
*/
package log

import "lnk.dev/linkharness/store/event"

// Part of the format.
const (
	// FileName is the log's name in the conversation's folder.
	FileName = "events.jsonl"

	// TornFileName is where repaired torn tails are kept, beside the log.
	TornFileName = "events.jsonl.torn"

	// DamagedFileName is where Repair keeps what it cuts off a damaged
	// log, beside it.
	DamagedFileName = "events.jsonl.damaged"

	// FileMode is the permission the log and the torn file are created
	// with: a conversation is its owner's alone.
	FileMode = 0o600
)

// maxLine is the most bytes one write makes: the largest event and its '\n'.
// A torn tail is shorter, and so is every complete line.
const maxLine = event.MaxBytes + 1
