package disk

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// memFile is an open file of a Mem.
type memFile struct {
	m    *Mem
	node *memNode
	name string

	read, write, append bool
	off                 int64 // where Write writes without os.O_APPEND
	closed              bool
	lock                int // 0, or the flock held: 1 shared, 2 exclusive
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	switch {
	case f.closed:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrClosed}
	case !f.read:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EBADF}
	case off < 0:
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	data := f.node.data
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(b, data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	if f.append {
		// As os.File.WriteAt says.
		return 0, errors.New("os: invalid use of WriteAt on file opened with O_APPEND")
	}
	return f.writeAt(b, off, false)
}

func (f *memFile) Write(b []byte) (int, error) { return f.writeAt(b, 0, true) }

// writeAt writes b at off, or at the end for a file opened with
// os.O_APPEND, or at f.off when next is set.
func (f *memFile) writeAt(b []byte, off int64, next bool) (int, error) {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpWrite, Path: f.name, Fault: errno != 0}
	wrote := 0
	switch {
	case f.closed:
		op.Err = &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrClosed}
	case !f.write:
		op.Err = &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	case off < 0:
		op.Err = &fs.PathError{Op: "writeat", Path: f.name, Err: errors.New("negative offset")}
	default:
		if next {
			off = f.off
			if f.append {
				off = int64(len(f.node.data))
			}
		}
		k := len(b)
		if errno != 0 {
			k = 0
			if m.plan.Short {
				k = len(b) / 2
			}
			op.Err = &fs.PathError{Op: "write", Path: f.name, Err: errno}
		}
		if k > 0 {
			f.node.put(b[:k], off)
			m.stamp++
			f.node.changed = m.stamp
		}
		wrote = k
		if next {
			f.off = off + int64(k)
		}
	}
	err := op.Err
	m.done(op)
	return wrote, err
}

// put writes b at off, growing the file with zeros if off is past its end.
func (n *memNode) put(b []byte, off int64) {
	if end := off + int64(len(b)); end > int64(len(n.data)) {
		n.resize(end)
	}
	n.own(off)
	copy(n.data[off:], b)
	n.lost = cut(n.lost, off, off+int64(len(b)))
}

// resize cuts the file or grows it with zeros to size.
func (n *memNode) resize(size int64) {
	n.lost = cut(n.lost, size, max(size, int64(len(n.data))))
	data := n.data
	switch {
	case size <= int64(len(data)):
		n.data = data[:size]
	case size <= int64(cap(data)):
		// The bytes past len(data) may be another slice's still: a synced
		// one from before a Truncate, kept by this Mem or by an image.
		if n.cow {
			n.data = append(make([]byte, 0, cap(data)), data...)
			n.cow = false
		}
		old := len(n.data)
		n.data = n.data[:size]
		clear(n.data[old:])
	default:
		grown := make([]byte, size, max(size, 2*int64(cap(data))))
		copy(grown, data)
		n.data, n.cow = grown, false
	}
}

// own copies data to an array of its own if a change from off on would
// change bytes synced holds.
func (n *memNode) own(off int64) {
	if n.cow && off < int64(len(n.synced)) {
		n.data = append(make([]byte, 0, cap(n.data)), n.data...)
		n.cow = false
	}
}

func (f *memFile) Truncate(size int64) error {
	m := f.m
	m.mu.Lock()
	n, errno := m.count()
	op := Op{N: n, Kind: OpTruncate, Path: f.name, Fault: errno != 0}
	switch {
	case errno != 0:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: errno}
	case f.closed:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrClosed}
	case !f.write:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	case size < 0:
		op.Err = &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
	default:
		f.node.resize(size)
		m.stamp++
		f.node.changed = m.stamp
	}
	err := op.Err
	m.done(op)
	return err
}

// Device is the same for every file: a Mem is one filesystem.
func (f *memFile) Device() uint64 { return 0 }

func (f *memFile) Stat() (Info, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return Info{}, &fs.PathError{Op: "stat", Path: f.name, Err: fs.ErrClosed}
	}
	return Info{Size: int64(len(f.node.data)), Changed: f.node.changed}, nil
}

// Lock takes the flock as flock(2) does: a File holding the other kind
// lets go of it first. With ctx done it takes a free flock still, and
// returns ctx.Err() rather than wait, as disk.OS's does.
func (f *memFile) Lock(ctx context.Context, exclusive bool) error {
	want := 1
	if exclusive {
		want = 2
	}
	m := f.m
	for {
		m.mu.Lock()
		if f.closed {
			m.mu.Unlock()
			return &fs.PathError{Op: "flock", Path: f.name, Err: fs.ErrClosed}
		}
		if f.lock != want {
			f.release()
		}
		n := f.node
		free := n.ex == nil && (want == 1 || len(n.shared) == 0)
		if f.lock == want || free {
			if f.lock != want {
				f.lock = want
				if want == 2 {
					n.ex = f
				} else {
					if n.shared == nil {
						n.shared = make(map[*memFile]bool)
					}
					n.shared[f] = true
				}
			}
			m.mu.Unlock()
			return nil
		}
		if n.freed == nil {
			n.freed = make(chan struct{})
		}
		freed := n.freed
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-freed:
		}
	}
}

func (f *memFile) Unlock() {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.release()
}

// release lets go of f's flock; f.m.mu is held.
func (f *memFile) release() {
	n := f.node
	switch f.lock {
	case 0:
		return
	case 1:
		delete(n.shared, f)
	case 2:
		n.ex = nil
	}
	f.lock = 0
	if n.freed != nil {
		close(n.freed)
		n.freed = nil
	}
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.release()
	f.closed = true
	return nil
}
