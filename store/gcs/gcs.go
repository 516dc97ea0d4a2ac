package gcs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/internal/lease"
	"lnk.dev/linkharness/store/internal/rules"
)

var (
	_ store.Driver       = (*Driver)(nil)
	_ store.Lister       = (*Driver)(nil)
	_ store.Conversation = (*Conversation)(nil)
	_ store.Leaser       = (*Conversation)(nil)
	_ store.LeaseTaker   = (*Conversation)(nil)
	_ store.Meta         = (*Conversation)(nil)
	_ store.Narrower     = (*Conversation)(nil)
)

// The environment lnk-gcs reads its bucket from. Credentials are the
// client library's: Application Default Credentials, or no credentials
// when STORAGE_EMULATOR_HOST names an emulator.
const (
	BucketEnv = "LNK_GCS_BUCKET" // the bucket's name
	PrefixEnv = "LNK_GCS_PREFIX" // a prefix for every object, "" or ending in "/"
)

// maxSeqDigits is the most digits a seq has; part of the format.
const maxSeqDigits = 18

// seqTop is the largest seq, the one named by 18 zeros.
const seqTop = 999_999_999_999_999_999

// maxTries is how many times a conditional replace that lost a race is
// run, the first included.
const maxTries = 20

// Driver keeps one agent's conversations in a bucket. It is safe for
// concurrent use, and so are its Conversations; other processes may use the
// same bucket and agent at once. Use Open; the zero value is not usable.
type Driver struct {
	bucket *storage.BucketHandle
	root   string // prefix + escaped agent + "/"
	agent  string
	close  func() error

	// watch times other holders' leases on this process's clock.
	watch lease.Watch

	mu   sync.Mutex               // guards seen
	seen map[string]*atomic.Int64 // by thread: the highest seq known to be there
}

// maxSeen is the most threads a Driver remembers a seq of; past it, it
// forgets them all, and each thread's next Last lists once.
const maxSeen = 4096

// seenOf is thread's highest seq known to be there, kept by the Driver so
// that every Conversation of the thread opened by this process shares it:
// the plugin program opens one for each call. It stays true, since events
// are never removed.
func (d *Driver) seenOf(thread string) *atomic.Int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.seen[thread]; s != nil {
		return s
	}
	if d.seen == nil || len(d.seen) >= maxSeen {
		d.seen = make(map[string]*atomic.Int64)
	}
	s := new(atomic.Int64)
	d.seen[thread] = s
	return s
}

// Open keeps agent's conversations in bucket under prefix, through client.
// It reads nothing. Close closes client when own is true.
func Open(client *storage.Client, bucket, prefix, agent string, own bool) (*Driver, error) {
	if bucket == "" {
		return nil, errors.New("gcs: no bucket named")
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("gcs: prefix %q does not end in /", prefix)
	}
	if agent == "" || len(agent) > rules.MaxThreadBytes {
		return nil, fmt.Errorf("gcs: %w: agent key of %d bytes, not 1 to %d", store.ErrBadName, len(agent), rules.MaxThreadBytes)
	}
	d := &Driver{bucket: client.Bucket(bucket), root: prefix + escape(agent) + "/", agent: agent, close: func() error { return nil }}
	if own {
		d.close = client.Close
	}
	return d, nil
}

// escape makes key one path segment: bytes outside [A-Za-z0-9._-] become
// %XX.
func escape(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// unescape undoes escape.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%q ends inside an escape", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%q: bad escape at %d", s, i)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

// eventName returns the name of seq's event in a thread's events folder.
func eventName(seq int64) string {
	return fmt.Sprintf("%018d.%d", seqTop-seq, seq)
}

// seqOfName reads the seq from an event's name in its folder.
func seqOfName(name string) (int64, error) {
	if len(name) < maxSeqDigits+2 || name[maxSeqDigits] != '.' {
		return 0, fmt.Errorf("%w: object %q is no event's name", store.ErrCorrupt, name)
	}
	inv, err := strconv.ParseInt(name[:maxSeqDigits], 10, 64)
	if err != nil || inv < 0 || inv >= seqTop {
		return 0, fmt.Errorf("%w: object %q is no event's name", store.ErrCorrupt, name)
	}
	return seqTop - inv, nil
}

// Open returns thread's conversation; it reads nothing.
func (d *Driver) Open(thread string) (store.Conversation, error) {
	if err := rules.Thread(thread); err != nil {
		return nil, fmt.Errorf("gcs: agent %q: %w", d.agent, err)
	}
	t := escape(thread)
	return &Conversation{
		d:      d,
		thread: thread,
		events: d.root + "events/" + t + "/",
		lease:  d.root + "leases/" + t,
		meta:   d.root + "meta/" + t + "/",
		seen:   d.seenOf(thread),
	}, nil
}

// Close closes the client when the driver owns it.
func (d *Driver) Close() error {
	if err := d.close(); err != nil {
		return fmt.Errorf("gcs: close: %w", err)
	}
	return nil
}

// Threads lists the threads with events: the folders under events/, one
// listing with a delimiter, sorted by the keys' bytes.
func (d *Driver) Threads(ctx context.Context) ([]string, error) {
	q := &storage.Query{Prefix: d.root + "events/", Delimiter: "/"}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, err
	}
	threads := []string{}
	it := d.bucket.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gcs: agent %q: threads: %w", d.agent, err)
		}
		if a.Prefix == "" {
			continue
		}
		th, err := unescape(strings.TrimSuffix(strings.TrimPrefix(a.Prefix, q.Prefix), "/"))
		if err != nil {
			return nil, fmt.Errorf("gcs: agent %q: threads: %w: %v", d.agent, store.ErrCorrupt, err)
		}
		threads = append(threads, th)
	}
	slices.Sort(threads)
	return threads, nil
}

// Conversation is one thread's conversation. It holds nothing open between
// calls and is safe for concurrent use.
type Conversation struct {
	d      *Driver
	thread string
	events string // the events folder's name, ending in "/"
	lease  string // the lease object's name
	meta   string // the side data folder's name, ending in "/"

	seen *atomic.Int64 // the highest seq known to be there, the Driver's
}

func (c *Conversation) errorf(format string, args ...any) error {
	return fmt.Errorf("gcs: agent %q, thread %q: "+format, append([]any{c.d.agent, c.thread}, args...)...)
}

// sawSeq raises the highest seq known to be there to seq.
func (c *Conversation) sawSeq(seq int64) {
	for {
		had := c.seen.Load()
		if seq <= had || c.seen.CompareAndSwap(had, seq) {
			return
		}
	}
}

// Close does nothing: a Conversation holds nothing open.
func (c *Conversation) Close() error { return nil }

// probeMost is how many events past the highest seq seen Last looks for
// one by one before it lists instead.
const probeMost = 4

// Last returns the highest seq written, or 0. From the highest seq already
// seen it asks for the next event's object, one by one: the first missing
// is past the last, since events are contiguous and never removed. With
// nothing seen yet, or more than probeMost events written since, it lists
// the thread's events and takes the first name, listing only names before
// the highest seq seen.
func (c *Conversation) Last(ctx context.Context) (int64, error) {
	seen := c.seen.Load()
	for i := 0; seen > 0 && i < probeMost; i++ {
		_, err := c.d.bucket.Object(c.events + eventName(seen+1)).Attrs(ctx)
		if errors.Is(err, storage.ErrObjectNotExist) {
			return seen, nil
		}
		if err != nil {
			return 0, c.errorf("last: %w", err)
		}
		c.sawSeq(seen + 1)
		seen = c.seen.Load()
	}
	q := &storage.Query{Prefix: c.events}
	if seen > 0 {
		q.EndOffset = c.events + eventName(seen)
	}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return 0, err
	}
	it := c.d.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = 1
	a, err := it.Next()
	if errors.Is(err, iterator.Done) {
		return seen, nil
	}
	if err != nil {
		return 0, c.errorf("last: %w", err)
	}
	last, err := seqOfName(strings.TrimPrefix(a.Name, c.events))
	if err != nil {
		return 0, c.errorf("last: %w", err)
	}
	c.sawSeq(last)
	return last, nil
}

// isCode says whether err is an answer of HTTP status code.
func isCode(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}

func isPrecondition(err error) bool { return isCode(err, http.StatusPreconditionFailed) }
