/*
Package compact keeps a conversation small: its events in zstd frames
appended to events.zst, and the events since the last frame as lines of
events.jsonl, the tail. Every 32 events of the tail, or 1 MiB of them,
become the next frame, compressed at zstd level 19. Nothing written is ever
rewritten: frames are only appended, and the tail is only appended to and
emptied.

# The bytes on disk

events.zst is a sequence of zstd frames (RFC 8878), readable by any zstd
program: `zstd -dc events.zst` prints every framed event, one JSON line
each, the skippable frames skipped.

	offset 0     thread frame   skippable, magic 0x184D2A5B, size n (u32 LE),
	                            n bytes: {"thread":"telegram:42"}
	             unit 1         data frame: zstd frame, magic 0xFD2FB528,
	                            holding events 1…k, each a JSON line ending '\n'
	                            seal: skippable, magic 0x184D2A5C, size 16,
	                            frame length (u32 LE, the data frame's bytes),
	                            events (u32 LE), last seq (u64 LE)
	             unit 2         data frame, seal (events k+1 … )
	             …
	end          (the file's size)

The thread frame names the whole thread (telegram:42), which the folder's
name (telegram-42~mxmekvd5hxz7cn2b) does not say whole; it is written with
the first event, taken from that event's "thread" key, and never after. Each
unit is a data frame and the seal after it, written with one write call: the
data frame's content is the tail's lines, byte for byte, with their '\n's.
The seal is of fixed size, so the frames are walked back from the end, 24
bytes a step, without an index; forward they are walked by their headers: a
skippable frame gives its size, and a data frame is its header and blocks,
each block's header giving its size, then a checksum (RFC 8878 §3.1.1).
Nothing but a unit follows the thread frame, and nothing but the seal
follows a data frame.

events.jsonl, the tail, is the log's form (see store/log): one event a
line, seq first, seqs contiguous. Its first line is the seq after the last
framed one; a line whose seq is framed already is a copy left by a fold cut
short (below) and is read once, from its frame.

# The lock

The tail's flock is the conversation's: writers hold it exclusive for a
whole Append, fold included; readers hold it shared while they take in the
tail and the end of events.zst, so they never see a frame written and its
events still in the tail as two copies, nor the tail emptied and its frame
not yet seen. Frames before that end never change, so a reader reads them
after letting go.

Every open, read, write, fdatasync, truncate, flock and folder sync goes
through Options.FS (store/internal/disk), the real filesystem unless a
test stands a crashable or failing one in its place.

# A fold, and what a stop in the middle of it leaves

A fold, under the writers' lock: (1) cut off what follows the last whole
unit of events.zst, if anything does; (2) write the tail's lines as the
next unit; (3) fdatasync events.zst; (4) empty the tail; (5) fdatasync it.
The tail is emptied only once its frame is on the disk. A writer that stops
during (2) or (3) leaves a unit cut short: it is not read (walked by its
headers it runs past the end, or its seal is missing), its events are still
in the tail, and the next fold cuts it off at (1), keeping its bytes in
events.zst.torn for a person to look at. A writer that stops between (3)
and (5) leaves the tail holding the frame's events again: they are read
once, and the next Append empties the tail before it writes. A writer
killed after (2), before its fdatasync, leaves a whole unit that a crash
may still take: the next Append makes events.zst durable before it
empties the tail, as it does the thread frame before it writes seq 1.

An fdatasync that fails may leave what it was to make durable readable
though not on the disk, and a later one that succeeds does not put it
there. So an Append or a fold whose fdatasync fails cuts off what it
wrote (the line, the unit, the thread frame) before it returns: the retry
writes it again rather than find it and acknowledge it. If the cut fails
too, the bytes stay; so an Append that goes on from bytes it did not see
made durable (the same bytes again at a taken seq, a unit whose events
the tail still holds, another writer's thread frame) writes them again
over themselves before its fdatasync, rather than only sync them.

# Deferred lines, and syncs shared

AppendDeferred (store.Deferred) writes its line to the tail without the
tail's fdatasync; the next Append's or Commit's makes it durable with its
own, and a fold makes durable all it frames. Until then a machine's crash
may take it, as it may any line not acknowledged; if that fdatasync fails,
it cuts the deferred lines off with its own. The writers' lock is let go
between, since readers take it shared; a turn's writers are kept out by
its folder's flock. Every fdatasync goes through the filesystem's
durable.Committer, which syncs the writers of this process that wait at once
with one syncfs (see store/log).

# Three kinds of end

Reading the tail: a clean end; an incomplete final line, which readers do
not read and the next Append cuts off, keeping it in events.jsonl.torn as
store/log does; anything else is corruption. Reading events.zst: a clean
end after a seal; a unit cut short, as above; anything else (an unknown
magic, a reserved block type, a seal whose numbers do not fit its frame, a
frame that does not decompress to whole events with the seal's seqs) is a
*CorruptError with the file and the offset, wrapping store.ErrCorrupt,
never skipped. A unit cut short whose events the tail does not hold (the
tail is empty, or goes on after them) was whole once: that is damage too,
reported at the unit's offset. A read forward from seq 1 hands out what is
whole before damage, then reports it.

# Damage, and what Repair does

Damage is never repaired by a turn: only Repair (lnk agent chat repair,
with the agent stopped) cuts it. It keeps the longest run of events from
seq 1 that reads whole: the thread frame, the units that decompress to
their seals' seqs, the tail's lines that follow them. What follows in
events.zst goes to events.zst.damaged, what follows in the tail to
events.jsonl.damaged (each as one record of the torn files' form, its
first line also saying what was found there), durably before the file is
cut; what a writer that stopped leaves goes to the torn files instead, as
an Append would cut it. Cutting events.zst in the middle leaves the tail's
events after a gap, so they go too. If the thread frame itself is cut, the
tail's seq 1 names the thread again.

# Memory

Encoding at level 19 takes about 20 MiB of tables: one encoder serves the
whole process, one fold at a time, and is let go when nobody has folded for
a minute. The decoder is shared the same way, decodes one frame at a time,
and refuses a frame declaring more than MaxFrameContent bytes.
*/
package compact

import "lnk.dev/linkharness/store/event"

// Part of the format.
const (
	// FramesName is the frames' file in the conversation's folder; its
	// presence says the conversation is compact.
	FramesName = "events.zst"
	// TailName is the tail's file: the events since the last frame.
	TailName = "events.jsonl"
	// TornTailName keeps the incomplete final lines cut off the tail.
	TornTailName = "events.jsonl.torn"
	// TornFramesName keeps the units cut short, cut off events.zst.
	TornFramesName = "events.zst.torn"
	// DamagedTailName and DamagedFramesName keep what Repair cuts off a
	// damaged tail or events.zst.
	DamagedTailName   = "events.jsonl.damaged"
	DamagedFramesName = "events.zst.damaged"

	// FileMode is the permission the files are created with.
	FileMode = 0o600

	// ThreadMagic is the thread frame's magic number, SealMagic a seal's:
	// two of the sixteen skippable ones (0x184D2A50 to 0x184D2A5F).
	ThreadMagic uint32 = 0x184D2A5B
	SealMagic   uint32 = 0x184D2A5C
	// FrameMagic starts every zstd data frame.
	FrameMagic uint32 = 0xFD2FB528

	// SealSize is a seal's size: its 8-byte skippable header and its
	// 16-byte payload.
	SealSize = 24

	// MaxThreadFrame is the most a thread frame's payload may hold.
	MaxThreadFrame = 4 << 10

	// FoldEvents and FoldBytes say when the tail becomes a frame: once it
	// holds this many events, or this many bytes.
	FoldEvents = 32
	FoldBytes  = 1 << 20

	// Level is the zstd level frames are compressed at.
	Level = 19

	// MaxFrameContent is the most a data frame may decompress to: a tail
	// just short of FoldBytes and one event of the largest size.
	MaxFrameContent = FoldBytes + event.MaxBytes + 1
)

// maxLine is the most bytes one tail line takes with its '\n'.
const maxLine = event.MaxBytes + 1

// maxTail is the most the tail may hold: a fold is due before the tail
// passes FoldEvents or FoldBytes, and one line comes after that check,
// plus an incomplete line left by a writer that stopped.
const maxTail = MaxFrameContent + maxLine
