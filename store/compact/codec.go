package compact

import (
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// idleAfter is how long an encoder or a decoder nobody uses is kept.
const idleAfter = time.Minute

// held is one value shared by the whole process, made when first wanted
// and let go once nobody has used it for idle. The timer that lets it go
// exists only while the value does, so an idle process holds neither. The
// zero value is not usable; a held is safe for concurrent use.
type held[T any] struct {
	make  func() (T, error)
	close func(T)
	idle  time.Duration

	mu sync.Mutex
	// guarded by mu
	v     T
	ok    bool        // v is made
	users int         // callers between get and put
	last  time.Time   // when the last user let go
	timer *time.Timer // lets v go; nil while v is not made
	made  int         // how many times v was made, for tests
}

// get returns the value, making it if needed; put must follow.
func (h *held[T]) get() (T, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ok {
		v, err := h.make()
		if err != nil {
			return v, err
		}
		h.v, h.ok = v, true
		h.made++
		h.timer = time.AfterFunc(h.idle, h.expire)
	}
	h.users++
	return h.v, nil
}

// put says the caller of get is done with the value.
func (h *held[T]) put() {
	h.mu.Lock()
	h.users--
	h.last = time.Now()
	h.mu.Unlock()
}

// expire lets the value go if nobody used it for idle, or looks again
// when that will be.
func (h *held[T]) expire() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ok {
		return
	}
	if wait := h.idle - time.Since(h.last); h.users > 0 || wait > 0 {
		h.timer.Reset(max(wait, h.idle/4))
		return
	}
	h.close(h.v)
	var zero T
	h.v, h.ok, h.timer = zero, false, nil
}

// holding says whether the value is made.
func (h *held[T]) holding() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ok
}

// newEncoder makes the encoder every fold uses: level 19, one fold at a
// time (a fold is rare: once per 32 events), checksums on, a window of
// 1 MiB (a frame is about 20 KB; the window is most of the tables).
func newEncoder() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(Level)),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(true),
		zstd.WithLowerEncoderMem(true),
		zstd.WithWindowSize(1<<20),
	)
}

// newDecoder makes the decoder every read uses: one frame at a time, no
// frame over MaxFrameContent, no window over it either.
func newDecoder() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxFrameContent),
		zstd.WithDecoderMaxWindow(MaxFrameContent),
	)
}

// encoders and decoders are the process's: never one per conversation.
var (
	encoders = &held[*zstd.Encoder]{make: newEncoder, close: func(e *zstd.Encoder) { e.Close() }, idle: idleAfter}
	decoders = &held[*zstd.Decoder]{make: newDecoder, close: func(d *zstd.Decoder) { d.Close() }, idle: idleAfter}
)
