package disk

import (
	"bytes"
	"io/fs"
)

// Crash returns a new Mem holding what would survive if the machine lost
// its power now: the folders, and the files whose names are durable with
// their synced bytes. m is not changed and its Files still work. The new
// Mem counts from 0, has no plan, no OnOp and no flocks.
func (m *Mem) Crash() *Mem { return m.crash(false) }

// CrashTorn is Crash where each durable file whose bytes now are its
// synced bytes and more (it was appended to since its last Sync) keeps
// the first half of the more as well: what a crash in the middle of the
// append's writeback leaves.
func (m *Mem) CrashTorn() *Mem { return m.crash(true) }

// Torn says whether CrashTorn's image would differ from Crash's.
func (m *Mem) Torn() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.durable {
		if n := m.files[name]; len(tornTail(n.data, n.synced)) > 0 {
			return true
		}
	}
	return false
}

// tornTail returns what a torn crash keeps of now beyond synced.
func tornTail(now, synced []byte) []byte {
	if len(now) <= len(synced) || !bytes.Equal(now[:len(synced)], synced) {
		return nil
	}
	return now[len(synced) : len(synced)+(len(now)-len(synced))/2]
}

func (m *Mem) crash(torn bool) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.stamp = m.stamp
	for d := range m.dirs {
		c.dirs[d] = true
	}
	for name := range m.durable {
		n := m.files[name]
		kept := n.synced
		if tail := tornTail(n.data, kept); torn && len(tail) > 0 {
			kept = append(kept[:len(kept):len(kept)], tail...)
		}
		c.files[name] = &memNode{data: kept, synced: kept, cow: true, mode: n.mode, changed: n.changed}
		c.durable[name] = true
	}
	return c
}

// Sync makes the file's bytes durable. Like disk.OS's, its error is the
// bare error number. When it fails, the bytes written since the last good
// Sync are dropped.
func (f *memFile) Sync() error { return f.sync(OpSync, "sync", false) }

// SyncFS syncs every file of the Mem: each as Sync does, and when it
// fails each as a failed Sync does.
func (f *memFile) SyncFS() error { return f.sync(OpSyncFS, "syncfs", true) }

// sync is Sync, or SyncFS when every file is set: the counted operation
// kind, op in the error of a closed file.
func (f *memFile) sync(kind Kind, op string, every bool) error {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	done := Op{N: n, Kind: kind, Path: f.name, Fault: errno != 0}
	switch {
	case f.closed:
		done.Err = &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case errno != 0:
		done.Err = errno
		if !every {
			m.failSync(f.node)
			break
		}
		for _, node := range m.files {
			if !bytes.Equal(node.data, node.synced) {
				m.failSync(node)
			}
		}
	case !every:
		f.node.sync()
	default:
		for _, node := range m.files {
			node.sync()
		}
	}
	err := done.Err
	m.done(done)
	return err
}

// failSync does to node what a failed Sync does, as the plan says; m.mu
// is held.
func (m *Mem) failSync(node *memNode) {
	if m.plan.Keep {
		node.lose()
		return
	}
	node.data, node.cow, node.lost = node.synced, true, nil
	m.stamp++
	node.changed = m.stamp
}

// sync makes node's bytes now its synced ones, but for what a failed Sync
// kept readable: the disk keeps what it held there.
func (node *memNode) sync() {
	if len(node.lost) > 0 {
		synced := bytes.Clone(node.data)
		for _, s := range node.lost {
			for i := s.from; i < s.to; i++ {
				synced[i] = 0
				if i < int64(len(node.synced)) {
					synced[i] = node.synced[i]
				}
			}
		}
		node.synced = synced
		return
	}
	// A full slice, so an append to data never shows through it.
	node.synced = node.data[:len(node.data):len(node.data)]
	node.cow = true
}

// span is the bytes [from, to) of a file.
type span struct{ from, to int64 }

// lose adds to n.lost the bytes of data that differ from synced's, or
// that synced does not reach: what a failed Sync did not write.
func (n *memNode) lose() {
	data, synced := n.data, n.synced
	for i := 0; i < len(data); {
		if i < len(synced) && data[i] == synced[i] {
			i++
			continue
		}
		j := i
		for j < len(data) && (j >= len(synced) || data[j] != synced[j]) {
			j++
		}
		n.lost = add(n.lost, int64(i), int64(j))
		i = j
	}
}

// add returns spans with [from, to) added, apart and in order still.
func add(spans []span, from, to int64) []span {
	out := make([]span, 0, len(spans)+1)
	for _, s := range spans {
		switch {
		case s.to < from:
			out = append(out, s)
		case to < s.from:
			out = append(out, span{from, to})
			from, to = s.from, s.to
		default:
			from, to = min(from, s.from), max(to, s.to)
		}
	}
	return append(out, span{from, to})
}

// cut returns spans without [from, to).
func cut(spans []span, from, to int64) []span {
	if len(spans) == 0 || from >= to {
		return spans
	}
	var out []span
	for _, s := range spans {
		if s.from < from {
			out = append(out, span{s.from, min(s.to, from)})
		}
		if s.to > to {
			out = append(out, span{max(s.from, to), s.to})
		}
	}
	return out
}
