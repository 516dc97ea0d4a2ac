package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"lnk.dev/linkharness/harness/internal/osfile"
)

// The id index. A message's id is found however far back it is, at a cost
// per turn that does not grow with the conversation: each conversation's
// folder holds IndexFile, a hash table on disk of the ids of its messages,
// each slot the id's hash and the seq of the message that carries it.
// Finding an id reads one or two slots; adding one writes a slot and the
// header; the table doubles (made again, written beside and renamed over)
// once half full, so what growing costs is paid once per doubling.
//
// The index is derived: the events are the truth. Its header says through
// which seq it holds every message, and a turn first adds the messages of
// the events after that (those of the turn before, which wrote its
// answers after its message), reading them newest first; a folder without
// it, or with one damaged, has it made again from every event, once. A
// hash found is checked against the event at its seq, so a collision or a
// stale slot costs a read, never a wrong answer. It is written without a
// sync: a process that dies keeps what it wrote (the kernel has it); a
// machine that loses power may lose its last slots while the header
// survives, and a message then found nowhere is asked again: removing the
// file has it made again from the events.
//
//	header (idsHeader bytes, little-endian):
//	  magic    [8]byte  "lnkids1\n"
//	  slots    uint64   the table's size, a power of two
//	  count    uint64   ids held
//	  through  int64    every message up to this seq is held
//	  lastMsg  int64    the seq of the conversation's last message, 0 for none
//	  reserved [8]byte
//	slots (slots × 16 bytes): hash uint64 (0: empty), seq int64
const (
	// IndexFile is the index's file name in a conversation's folder.
	IndexFile  = "ids.index"
	idsMagic   = "lnkids1\n"
	idsHeader  = 48
	idsSlot    = 16
	idsMinSize = 64 // slots of a new table

	// smallEvents is how many events a conversation holds before an
	// index opened with OpenIndexDeferred is made: until then its ids are
	// kept in memory, read from its events.
	smallEvents = 32
)

// errIDsDamaged comes from OpenIndex when the file is not an index: it is
// made again.
var errIDsDamaged = errors.New("idempotency: id index damaged")

// hash is id's hash in the table; never 0, which marks an empty slot.
// The table outlives the process, so the hash is fixed: FNV-1a, 64 bits,
// with 0 taken as 1.
func hash[S string | []byte](id S) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	if h == 0 {
		h = 1
	}
	return h
}

// Index is one conversation's open index. It is for one turn at a time,
// the turn that holds the conversation; kept open between its turns in a
// warm conversation (see package warm), valid as long as that is: no other
// turn wrote the conversation.
//
// Its header is written when the turn is done with it (Flush), and in a
// warm conversation only once it is idsHeaderLag messages behind: the
// slots a turn adds are written as they are added, and a header behind
// them (a process that died, a warm conversation let go of) says less
// than the slots hold, so the next turn's catching up reads those few
// events again and finds their slots there.
type Index struct {
	path    string
	f       *os.File
	slots   uint64
	count   uint64
	through int64
	lastMsg int64
	dirty   bool  // the header in memory is not the file's
	made    bool  // the file was made (remake) since it was opened: its folder changed
	disk    int64 // through, as the file's header says
	buf     [idsHeader]byte

	// deferred says there is no file: the ids are mem's, read from the
	// conversation's events, until it holds smallEvents (OpenIndexDeferred).
	deferred bool
	mem      []entry

	// free is the empty slot the last find ended at, for hash, while no
	// slot was written since: an add of the id looked for writes it there
	// without reading it again.
	free struct {
		hash, slot uint64
		ok         bool
	}
}

// OpenIndex opens the index in dir, or makes an empty one (through 0) when
// there is none or it is damaged.
func OpenIndex(dir string) (*Index, error) { return openIndex(dir, false) }

// OpenIndexDeferred is OpenIndex, but where there is no index it makes none
// until the conversation holds smallEvents events: a small conversation's
// ids are kept in memory, read from its events (CatchUp) when the index is
// not kept open from the turn before, which costs about what reading the
// file would, and its first turn makes one file fewer. The file is made,
// holding them, by the CatchUp or Add that reaches smallEvents.
func OpenIndexDeferred(dir string) (*Index, error) { return openIndex(dir, true) }

func openIndex(dir string, deferred bool) (*Index, error) {
	path := filepath.Join(dir, IndexFile)
	x := &Index{path: path}
	f, err := osfile.Open(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if deferred {
			x.deferred = true
			return x, nil
		}
		return x, x.makeTable(nil, true)
	}
	if err != nil {
		return nil, fmt.Errorf("the id index: %w", err)
	}
	x.f = f
	if err := x.readHeader(); err != nil {
		if !errors.Is(err, errIDsDamaged) {
			f.Close()
			return nil, err
		}
		return x, x.remake(nil)
	}
	return x, nil
}

func (x *Index) readHeader() error {
	fi, err := x.f.Stat()
	if err != nil {
		return fmt.Errorf("the id index: %w", err)
	}
	if _, err := x.f.ReadAt(x.buf[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return errIDsDamaged
		}
		return fmt.Errorf("the id index: %w", err)
	}
	b := x.buf[:]
	if string(b[:8]) != idsMagic {
		return errIDsDamaged
	}
	le := binary.LittleEndian
	x.slots, x.count = le.Uint64(b[8:]), le.Uint64(b[16:])
	x.through, x.lastMsg = int64(le.Uint64(b[24:])), int64(le.Uint64(b[32:]))
	x.disk = x.through
	if x.slots < idsMinSize || x.slots&(x.slots-1) != 0 || x.slots > 1<<40 || x.count >= x.slots ||
		x.through < 0 || x.lastMsg < 0 || x.lastMsg > x.through ||
		fi.Size() != int64(idsHeader+x.slots*idsSlot) {
		return errIDsDamaged
	}
	return nil
}

// Reset empties the index: it is made again from every event.
func (x *Index) Reset() error {
	if x.deferred {
		x.mem, x.count, x.through, x.lastMsg = x.mem[:0], 0, 0, 0
		return nil
	}
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	x.slots = 0
	return x.remake(nil)
}

// Close writes the header (Flush) and closes the file.
func (x *Index) Close() {
	if x != nil && x.f != nil {
		x.Flush()
		x.f.Close()
		x.f = nil
	}
}

// Discard closes the file without writing the header: x may no longer be
// the conversation's (a warm conversation let go of, another turn may
// have written the index since), and a header behind costs only a
// catching up.
func (x *Index) Discard() {
	if x != nil && x.f != nil {
		x.f.Close()
		x.f = nil
	}
}

// idsHeaderLag is how many messages the header of an index kept open in a
// warm conversation may say less than it holds.
const idsHeaderLag = 32

// Lags says whether the file is behind what the index holds by
// idsHeaderLag messages or more: its header, or, deferred, the whole file
// once the conversation holds smallEvents events.
func (x *Index) Lags() bool {
	if x.deferred {
		return x.through >= smallEvents
	}
	return x.through-x.disk >= idsHeaderLag
}

// Flush writes the header when what it says changed; a deferred index's
// file is made once the conversation holds smallEvents events.
func (x *Index) Flush() error {
	if x.deferred {
		return x.grown()
	}
	if !x.dirty {
		return nil
	}
	return x.writeHeader()
}

// grown makes the file of a deferred index once the conversation holds
// smallEvents events, holding the ids kept in memory, its header saying
// through what.
func (x *Index) grown() error {
	if !x.deferred || x.through < smallEvents {
		return nil
	}
	mem, through, lastMsg := x.mem, x.through, x.lastMsg
	x.deferred, x.mem, x.count = false, nil, 0
	if err := x.makeTable(mem, true); err != nil {
		return err
	}
	x.through, x.lastMsg = through, lastMsg
	return x.writeHeader()
}

// Find returns the seqs whose slots hold id's hash: the message with id is
// at one of them, or nowhere. Almost always one read of one slot.
func (x *Index) Find(id string) ([]int64, error) {
	h := hash(id)
	var (
		out  []int64
		slot [idsSlot * 4]byte
	)
	if x.deferred {
		for _, e := range x.mem {
			if e.hash == h {
				out = append(out, e.seq)
			}
		}
		return out, nil
	}
	mask := x.slots - 1
	for i, n := h&mask, uint64(0); n < x.slots; {
		k := min(uint64(len(slot)/idsSlot), x.slots-i) // read up to 4 slots, not past the end
		if _, err := x.f.ReadAt(slot[:k*idsSlot], int64(idsHeader+i*idsSlot)); err != nil {
			return nil, fmt.Errorf("the id index: %w", err)
		}
		for j := range k {
			s := slot[j*idsSlot:]
			got := binary.LittleEndian.Uint64(s)
			if got == 0 {
				x.free.hash, x.free.slot, x.free.ok = h, (i+j)&mask, true
				return out, nil
			}
			if got == h {
				out = append(out, int64(binary.LittleEndian.Uint64(s[8:])))
			}
		}
		n += k
		i = (i + k) & mask
	}
	return out, nil
}

// Add adds id at seq, a message, and says the index holds every message
// through seq. A message with no id is only recorded as the last.
func (x *Index) Add(id string, seq int64) error {
	if id == "" {
		x.lastMsg = seq
		x.SetThrough(seq)
		return x.grown()
	}
	if err := x.put([]entry{{hash(id), seq}}); err != nil {
		return err
	}
	x.lastMsg = max(x.lastMsg, seq)
	x.SetThrough(seq)
	return x.grown()
}

// Through is the seq through which the index holds every message.
func (x *Index) Through() int64 { return x.through }

// LastMsg is the seq of the conversation's last message, 0 for none.
func (x *Index) LastMsg() int64 { return x.lastMsg }

// Made says whether the file was made (again) since the index was opened,
// or since Kept: a name was made in its folder.
func (x *Index) Made() bool { return x.made }

// Kept marks the index as taken open by a turn from the turn before: its
// folder is as that turn left it, the file not made since.
func (x *Index) Kept() { x.made = false }

// entry is one slot's contents.
type entry struct {
	hash uint64
	seq  int64
}

// put writes entries into their slots, the table doubled first when they
// would fill it over half; a deferred index keeps them in memory.
func (x *Index) put(entries []entry) error {
	if x.deferred {
		x.mem = append(x.mem, entries...)
		x.count += uint64(len(entries))
		return nil
	}
	if (x.count+uint64(len(entries)))*2 > x.slots {
		return x.remake(entries)
	}
	var slot [idsSlot]byte
	mask := x.slots - 1
	for k, e := range entries {
		i := e.hash & mask
		known := x.free.ok && x.free.hash == e.hash // found empty by the find before
		if known {
			i = x.free.slot
		}
		x.free.ok = false
		there := false
		for probes := uint64(0); !known; {
			if _, err := x.f.ReadAt(slot[:], int64(idsHeader+i*idsSlot)); err != nil {
				return fmt.Errorf("the id index: %w", err)
			}
			got := binary.LittleEndian.Uint64(slot[:])
			if got == 0 {
				break
			}
			if got == e.hash && int64(binary.LittleEndian.Uint64(slot[8:])) == e.seq {
				// There already, added by a turn whose header was not
				// written: the header's count did not count it.
				there = true
				break
			}
			if probes++; probes == x.slots { // full, its count wrong: made again from the slots it holds
				return x.remake(entries[k:])
			}
			i = (i + 1) & mask
		}
		if !there {
			binary.LittleEndian.PutUint64(slot[:], e.hash)
			binary.LittleEndian.PutUint64(slot[8:], uint64(e.seq))
			if _, err := x.f.WriteAt(slot[:], int64(idsHeader+i*idsSlot)); err != nil {
				return fmt.Errorf("the id index: %w", err)
			}
		}
		x.count++
		x.dirty = true
	}
	return nil
}

// SetThrough records that every message through seq is held: in the
// header, written by Flush.
func (x *Index) SetThrough(seq int64) {
	if seq > x.through {
		x.through, x.dirty = seq, true
	}
}

func (x *Index) writeHeader() error {
	b := x.buf[:]
	clear(b)
	copy(b, idsMagic)
	le := binary.LittleEndian
	le.PutUint64(b[8:], x.slots)
	le.PutUint64(b[16:], x.count)
	le.PutUint64(b[24:], uint64(x.through))
	le.PutUint64(b[32:], uint64(x.lastMsg))
	if _, err := x.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("the id index: %w", err)
	}
	x.dirty, x.disk = false, x.through
	return nil
}

// remake writes the table again, twice as large as its ids and more need,
// with more added, beside the old one, and renames it over. With no old
// one (x.f nil) it is empty but for more, through 0.
func (x *Index) remake(more []entry) error { return x.makeTable(more, false) }

// makeTable is remake; inPlace, with no file at the index's path, it makes
// the table there.
func (x *Index) makeTable(more []entry, inPlace bool) error {
	var (
		old []entry
		err error
	)
	if x.f != nil && x.slots > 0 {
		table := make([]byte, x.slots*idsSlot)
		if _, err := x.f.ReadAt(table, idsHeader); err != nil {
			return fmt.Errorf("the id index: %w", err)
		}
		for i := 0; i < len(table); i += idsSlot {
			if h := binary.LittleEndian.Uint64(table[i:]); h != 0 {
				old = append(old, entry{h, int64(binary.LittleEndian.Uint64(table[i+8:]))})
			}
		}
	} else {
		x.through, x.lastMsg = 0, 0
	}
	n := uint64(len(old) + len(more))
	slots := uint64(idsMinSize)
	for slots < 4*n {
		slots *= 2
	}
	// With no file yet, the table is made in its place: one half made is
	// damaged (short, or no header yet) and made again. Creating a file
	// and renaming it cost a new conversation's first turn more than its
	// fdatasync.
	tmp := x.path + ".new"
	x.made = true
	var f *os.File
	if inPlace {
		f, err = os.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			tmp = ""
		}
	}
	if tmp != "" {
		f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	}
	if err != nil {
		return fmt.Errorf("the id index: %w", err)
	}
	if err := f.Truncate(int64(idsHeader + slots*idsSlot)); err != nil {
		f.Close()
		return fmt.Errorf("the id index: %w", err)
	}
	if x.f != nil {
		x.f.Close()
	}
	x.f, x.slots, x.count, x.free.ok = f, slots, 0, false
	if err := x.put(append(old, more...)); err != nil {
		return err
	}
	if err := x.writeHeader(); err != nil {
		return err
	}
	if tmp == "" {
		return nil
	}
	if err := os.Rename(tmp, x.path); err != nil {
		return fmt.Errorf("the id index: %w", err)
	}
	return nil
}
