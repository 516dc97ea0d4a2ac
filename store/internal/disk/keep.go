package disk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrCutShort is KeepCut's error when the file it copies from ends before
// the bytes it was to keep.
var ErrCutShort = errors.New("disk: the file was cut short while read")

// A Cut is bytes a store moves out of a file of a conversation's folder:
// From's bytes [Offset, Offset+Bytes), kept at the end of To, beside it,
// and why (a torn write, or the damage found at Offset), if said.
type Cut struct {
	From   string
	Offset int64
	Bytes  int64
	To     string
	Why    string
}

// KeepCut appends cut's bytes, read from src, to the file cut.To in dir as
// one record, for a person to look at: a line "# From offset Offset, Bytes
// bytes, cut TIME: Why" (without ": Why" when Why is ""), the bytes, and a
// '\n'. The record is durable when it returns: the file synced, then dir,
// where the file may be new. A file made is made with perm.
//
// The stores keep what they cut off (a torn final write, what Repair finds
// damaged) through it before they cut, so nothing is lost in silence.
func KeepCut(fsys FS, dir string, cut Cut, src io.ReaderAt, perm fs.FileMode) error {
	head := fmt.Appendf(nil, "# %s offset %d, %d bytes, cut %s", cut.From, cut.Offset, cut.Bytes, time.Now().UTC().Format(time.RFC3339Nano))
	if cut.Why != "" {
		head = fmt.Appendf(head, ": %s", cut.Why)
	}
	head = append(head, '\n')
	f, err := fsys.OpenFile(filepath.Join(dir, cut.To), os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(head)
	if err == nil {
		var k int64
		k, err = io.Copy(f, io.NewSectionReader(src, cut.Offset, cut.Bytes))
		if err == nil && k != cut.Bytes {
			err = ErrCutShort
		}
	}
	if err == nil {
		_, err = f.Write([]byte{'\n'})
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}
