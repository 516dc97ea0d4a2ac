package gcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"cloud.google.com/go/storage"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	"lnk.dev/linkharness/store/internal/lease"
	"lnk.dev/linkharness/store/internal/rules"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Append appends with no lease token.
func (c *Conversation) Append(ctx context.Context, seq int64, event []byte) error {
	return c.AppendLeased(ctx, seq, event, 0)
}

// AppendLeased checks the lease's token, that seq-1 is there, then writes
// event as seq only if its name is free; a name taken is compared byte for
// byte.
func (c *Conversation) AppendLeased(ctx context.Context, seq int64, event []byte, token int64) error {
	if err := rules.Event(seq, event); err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	if err := c.appendLeased(ctx, seq, event, token); err != nil {
		return c.errorf("append seq %d: %w", seq, err)
	}
	c.sawSeq(seq)
	return nil
}

func (c *Conversation) appendLeased(ctx context.Context, seq int64, ev []byte, token int64) error {
	cur, _, err := c.readLease(ctx)
	if err != nil {
		return err
	}
	if err := lease.Check(c.thread, cur, token); err != nil {
		return err
	}
	if prev := seq - 1; prev > c.seen.Load() {
		_, err := c.d.bucket.Object(c.events + eventName(prev)).Attrs(ctx)
		if errors.Is(err, storage.ErrObjectNotExist) {
			return fmt.Errorf("%w: seq %d, and seq %d is not there", store.ErrGap, seq, prev)
		}
		if err != nil {
			return err
		}
		c.sawSeq(prev)
	}
	name := c.events + eventName(seq)
	_, err = c.put(ctx, name, &storage.Conditions{DoesNotExist: true}, ev, nil)
	if !isPrecondition(err) {
		return err
	}
	had, _, err := c.get(ctx, name, event.MaxBytes)
	if err != nil {
		return err
	}
	if !bytes.Equal(had, ev) {
		return fmt.Errorf("%w: seq %d holds other bytes", store.ErrSeqTaken, seq)
	}
	return nil
}

// put writes data as the object name in one request, under conds when
// they are given, with its CRC32C for Cloud Storage to check.
func (c *Conversation) put(ctx context.Context, name string, conds *storage.Conditions, data []byte, meta map[string]string) (*storage.ObjectAttrs, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o := c.d.bucket.Object(name)
	if conds != nil {
		o = o.If(*conds)
	}
	w := o.NewWriter(ctx)
	w.ChunkSize = 0 // one request, not a resumable upload
	w.ContentType = "application/octet-stream"
	w.Metadata = meta
	w.CRC32C = crc32.Checksum(data, castagnoli)
	w.SendCRC32C = true
	if _, err := w.Write(data); err != nil {
		cancel()
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.Attrs(), nil
}

// get reads the object name, at most limit bytes, and its generation;
// storage.ErrObjectNotExist when it is not there.
func (c *Conversation) get(ctx context.Context, name string, limit int) ([]byte, int64, error) {
	r, err := c.d.bucket.Object(name).NewReader(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	if r.Attrs.Size > int64(limit) {
		return nil, 0, fmt.Errorf("%w: object %q of %d bytes, over %d", store.ErrCorrupt, name, r.Attrs.Size, limit)
	}
	b := make([]byte, 0, r.Attrs.Size)
	b, err = readAll(r, b, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("read %q: %w", name, err)
	}
	return b, r.Attrs.Generation, nil
}

// readAll reads r into b, to at most limit bytes.
func readAll(r io.Reader, b []byte, limit int) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			return nil, fmt.Errorf("%w: over %d bytes", store.ErrCorrupt, limit)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
