package log

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// repair cuts the torn final line [end, size) off the log, once its bytes
// are durable in the torn file beside it. The caller holds the writers'
// lock and writes after it; its fdatasync makes the cut durable.
func (c *Conversation) repair(end, size int64) error {
	n := size - end
	if n > maxLine {
		// One write makes at most maxLine bytes: this is no torn write.
		return c.corrupt(end, "%d bytes after the last line end, more than one write makes", n)
	}
	head := fmt.Appendf(nil, "%s %s offset %d, %d bytes, cut %s\n",
		tornMark, FileName, end, n, time.Now().UTC().Format(time.RFC3339Nano))
	rec := make([]byte, len(head)+int(n)+1)
	copy(rec, head)
	if err := c.readAt(rec[len(head):len(rec)-1], end); err != nil {
		return c.shrunk(end, err)
	}
	rec[len(rec)-1] = '\n'

	path := filepath.Join(c.dir, TornFileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("log: keep the torn tail of %s: %w", c.path, err)
	}
	_, err = f.Write(rec)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("log: keep the torn tail of %s in %s: %w", c.path, path, err)
	}
	if err := syncDir(c.dir); err != nil {
		return err
	}
	if err := c.f.Truncate(end); err != nil {
		return fmt.Errorf("log: cut the torn tail of %s at offset %d: %w", c.path, end, err)
	}
	return nil
}
