package model

import (
	"fmt"
	"strings"

	"github.com/valyala/fastjson"
)

// answerRoom counts an answer's bytes as they are taken in, so a stream
// that sends more than can be kept is ended rather than held. Its zero
// value has DefaultMaxAnswerBytes of room.
type answerRoom struct {
	most, kept int
}

func newRoom(req *Request) answerRoom { return answerRoom{most: req.MaxAnswerBytes} }

// take counts n more bytes of the answer.
func (r *answerRoom) take(n int) error {
	most := r.most
	if most <= 0 {
		most = DefaultMaxAnswerBytes
	}
	r.kept += n
	if r.kept > most {
		return fmt.Errorf("%w: over %d bytes", ErrTooLarge, most)
	}
	return nil
}

// answer is what every provider's stream decoder builds: the response,
// its text as it grows, and the room left for more. A decoder embeds it.
type answer struct {
	room answerRoom
	resp Response
	text strings.Builder
	post post // the call that streams it
}

// appendText adds a fragment to the answer and hands it on. The fragment
// handed on is a slice of the builder's string, which stays valid as the
// builder grows, so it costs no copy.
func (a *answer) appendText(frag []byte, onText func(string)) {
	if len(frag) == 0 {
		return
	}
	start := a.text.Len()
	a.text.Write(frag)
	if onText != nil {
		onText(a.text.String()[start:])
	}
}

// parsers holds the parsers of streams: one parses every event of a
// stream, and then the next stream's.
var parsers fastjson.ParserPool

// decodeEach parses each piece of JSON next returns (what names one in
// errors), with one parser for the whole stream, and hands it to take,
// until take says the answer is done or take or next fails. The answer's
// text is then set from its builder, however the stream ended.
func (a *answer) decodeEach(what string, next func() ([]byte, error), take func(*fastjson.Value) (bool, error)) error {
	p := parsers.Get()
	var err error
	for {
		var data []byte
		if data, err = next(); err != nil {
			break
		}
		v, perr := p.ParseBytes(data)
		if perr != nil {
			err = notJSON(what, perr)
			break
		}
		var done bool
		if done, err = take(v); err != nil || done {
			break
		}
	}
	parsers.Put(p)
	a.resp.Text = a.text.String()
	return err
}

// notJSON is the error of what, a piece of a stream, not parsed as JSON.
// A function of its own: decodeEach is under a turn's every wait for its
// stream.
//
//go:noinline
func notJSON(what string, err error) error {
	return fmt.Errorf("%w: %s is not JSON: %v", ErrMalformed, what, err)
}
