package idempotency

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// BenchmarkIDsPerTurn is what the id index costs a turn: opened, a new
// message's id looked for and not found, added, the index closed; in an
// index of n messages, for the cost not to grow with n.
func BenchmarkIDsPerTurn(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			x, err := OpenIndex(dir)
			if err != nil {
				b.Fatal(err)
			}
			entries := make([]entry, n)
			for i := range entries {
				entries[i] = entry{hash(fmt.Sprintf("m-%d", i)), int64(2*i + 1)}
			}
			if err := x.put(entries); err != nil {
				b.Fatal(err)
			}
			seq := int64(2*n + 1)
			x.SetThrough(seq)
			x.Close()
			ids := make([]string, 0, 1<<16)
			for i := range cap(ids) {
				ids = append(ids, fmt.Sprintf("new-%d", i))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				x, err := OpenIndex(dir)
				if err != nil {
					b.Fatal(err)
				}
				id := ids[i%len(ids)]
				if found, err := x.Find(id); err != nil || len(found) != 0 {
					b.Fatal(found, err)
				}
				seq += 2
				if err := x.Add(id, seq); err != nil {
					b.Fatal(err)
				}
				x.Close()
				i++
				if i%len(ids) == 0 { // every id added: start again from the n
					b.StopTimer()
					os.Remove(filepath.Join(dir, IndexFile))
					x, _ := OpenIndex(dir)
					x.put(entries)
					x.SetThrough(seq)
					x.Close()
					b.StartTimer()
				}
			}
		})
	}
}

// The index finds every id added across its doublings, and one damaged,
// full with a wrong count, or of another size is made again, never trusted.
func TestIDIndex(t *testing.T) {
	dir := t.TempDir()
	x, err := OpenIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		if err := x.Add(fmt.Sprintf("id-%d", i), int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	x.Close()
	if x, err = OpenIndex(dir); err != nil || x.through != n || x.lastMsg != n || x.count != n {
		t.Fatalf("reopened: %+v %v", x, err)
	}
	for i := range n {
		if seqs, err := x.Find(fmt.Sprintf("id-%d", i)); err != nil || !slices.Contains(seqs, int64(i+1)) {
			t.Fatalf("id-%d: %v %v", i, seqs, err)
		}
	}
	if seqs, _ := x.Find("never"); len(seqs) != 0 {
		t.Errorf("an id never added found at %v", seqs)
	}
	// Every slot taken, the header saying one: an add makes it again.
	full := make([]byte, idsMinSize*idsSlot)
	for i := 0; i < len(full); i += idsSlot {
		binary.LittleEndian.PutUint64(full[i:], uint64(i+7))
		binary.LittleEndian.PutUint64(full[i+8:], 1)
	}
	x.Close()
	path := filepath.Join(dir, IndexFile)
	x = &Index{path: path}
	if x.f, err = os.OpenFile(path, os.O_RDWR|os.O_TRUNC, 0); err != nil {
		t.Fatal(err)
	}
	x.slots, x.count = idsMinSize, 1
	x.f.WriteAt(full, idsHeader)
	if err := x.Add("after", 99); err != nil {
		t.Fatal(err)
	}
	if seqs, err := x.Find("after"); err != nil || !slices.Contains(seqs, 99) || x.slots <= idsMinSize {
		t.Errorf("after a full table: %v %v, %d slots", seqs, err, x.slots)
	}
	x.Close()
	for _, damage := range [][]byte{[]byte("not an index"), nil, append([]byte(idsMagic), make([]byte, 40)...)} {
		os.WriteFile(path, damage, 0o600)
		x, err := OpenIndex(dir)
		if err != nil || x.through != 0 || x.count != 0 {
			t.Errorf("%q: %+v %v", damage, x, err)
		}
		x.Close()
	}
}

// A conversation's first index is made in its place, not beside it and
// renamed (a folder where the one beside would go shows it); one left half
// made there, short or with no header yet, is damaged and made again.
func TestIDIndexMadeInPlace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, IndexFile)
	if err := os.Mkdir(path+".new", 0o700); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(dir)
	if err != nil {
		t.Fatalf("a new index: %v", err)
	}
	if err := x.Add("m-1", 1); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if x, err = OpenIndex(dir); err != nil || x.through != 1 || x.count != 1 {
		t.Fatalf("reopened: %+v %v", x, err)
	}
	x.Close()
	os.Remove(path + ".new")
	for _, half := range []int64{0, idsHeader + idsMinSize*idsSlot} { // made, nothing written; the table sized, no header
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		os.Truncate(path, half)
		x, err := OpenIndex(dir)
		if err != nil || x.through != 0 || x.count != 0 || x.slots != idsMinSize {
			t.Errorf("half made (%d bytes): %+v %v", half, x, err)
		}
		x.Close()
	}
}

// A slot added again, by a turn catching up after a header that was not
// written, is not added twice, and counts once.
func TestIDIndexAddedAgain(t *testing.T) {
	dir := t.TempDir()
	x, err := OpenIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add("a", 1); err != nil {
		t.Fatal(err)
	}
	x.Discard()
	if x, err = OpenIndex(dir); err != nil || x.through != 0 || x.count != 0 {
		t.Fatalf("reopened: %+v %v; want the header as it was", x, err)
	}
	if err := x.put([]entry{{hash("a"), 1}}); err != nil {
		t.Fatal(err)
	}
	x.SetThrough(1)
	x.Close()
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	slots := 0
	for i := idsHeader; i+idsSlot <= len(b); i += idsSlot {
		if binary.LittleEndian.Uint64(b[i:]) != 0 {
			slots++
		}
	}
	if x, err = OpenIndex(dir); err != nil || x.count != 1 || slots != 1 {
		t.Errorf("%d slots taken, count %d (%v); want 1", slots, x.count, err)
	}
	x.Close()
}

// A deferred index makes no file while the conversation holds fewer than
// smallEvents events: its ids are in memory, found and emptied there. The
// add that reaches smallEvents makes the file, holding them all, its
// header saying through what.
func TestIndexDeferred(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, IndexFile)
	x, err := OpenIndexDeferred(dir)
	if err != nil {
		t.Fatal(err)
	}
	noFile := func(when string) {
		t.Helper()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s: the file is there (%v)", when, err)
		}
	}
	for seq := int64(1); seq < smallEvents-2; seq += 2 {
		if err := x.Add(fmt.Sprintf("m-%d", seq), seq); err != nil {
			t.Fatal(err)
		}
		x.SetThrough(seq + 1) // its answer
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	noFile("30 events")
	if seqs, err := x.Find("m-29"); err != nil || !slices.Equal(seqs, []int64{29}) || x.Lags() {
		t.Fatalf("m-29 found at %v %v, lags %v; want 29, not lagging", seqs, err, x.Lags())
	}
	if err := x.Reset(); err != nil || x.Through() != 0 || x.LastMsg() != 0 {
		t.Fatalf("reset: %v, through %d", err, x.Through())
	}
	if seqs, _ := x.Find("m-29"); len(seqs) != 0 {
		t.Fatalf("m-29 found at %v after a reset", seqs)
	}
	noFile("a reset")
	for seq := int64(1); seq < smallEvents-2; seq += 2 {
		x.Add(fmt.Sprintf("m-%d", seq), seq)
	}
	if err := x.Add("", smallEvents); err != nil || !x.Made() {
		t.Fatalf("the add of the %dth event: %v, made %v", smallEvents, err, x.Made())
	}
	x.Close()
	if x, err = OpenIndex(dir); err != nil || x.Through() != smallEvents || x.LastMsg() != smallEvents || x.count != smallEvents/2-1 {
		t.Fatalf("the file made: %v, through %d, last message %d, %d ids", err, x.Through(), x.LastMsg(), x.count)
	}
	defer x.Close()
	for seq := int64(1); seq < smallEvents-2; seq += 2 {
		if seqs, err := x.Find(fmt.Sprintf("m-%d", seq)); err != nil || !slices.Contains(seqs, seq) {
			t.Errorf("m-%d found at %v %v in the file made", seq, seqs, err)
		}
	}
}
