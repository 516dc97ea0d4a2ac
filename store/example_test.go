package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/event"
	eventlog "lnk.dev/linkharness/store/log"
)

// A conversation kept as a log in a folder: events appended in order, the
// same bytes again accepted, other bytes at a taken seq refused, and the
// events read back newest first, as a turn reads its tail.
func ExampleConversation() {
	dir, err := os.MkdirTemp("", "lnk-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	var c store.Conversation
	c, err = eventlog.Open(dir) // or compact.Open, or a driver's Open(thread)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx := context.Background()
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	events := []*event.Event{
		{Seq: 1, Time: at, Type: event.TypeMessage, Thread: "web:1", Text: "hello"},
		{Seq: 2, Time: at.Add(time.Second), Type: event.TypeAnswer, Text: "hi, what can I do?"},
	}
	for _, e := range events {
		if err := c.Append(ctx, e.Seq, event.Append(nil, e)); err != nil {
			panic(err)
		}
	}

	// A retry whose answer was lost writes the same bytes again: success.
	fmt.Println("again:", c.Append(ctx, 2, event.Append(nil, events[1])))
	// Other bytes at a taken seq are refused, and so is a gap.
	other := &event.Event{Seq: 2, Time: at, Type: event.TypeAnswer, Text: "something else"}
	fmt.Println("taken:", errors.Is(c.Append(ctx, 2, event.Append(nil, other)), store.ErrSeqTaken))
	gap := &event.Event{Seq: 4, Time: at, Type: event.TypeMessage, Text: "too far"}
	fmt.Println("gap:", errors.Is(c.Append(ctx, 4, event.Append(nil, gap)), store.ErrGap))

	last, err := c.Last(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("last:", last)

	var d event.Decoder
	err = c.Read(ctx, store.FromLast, store.Backward, func(seq int64, b []byte) bool {
		var e event.Event
		if err := d.Decode(b, &e); err != nil {
			panic(err)
		}
		fmt.Printf("%d %s: %s\n", seq, e.Type, e.Text)
		return true // false stops the read
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// again: <nil>
	// taken: true
	// gap: true
	// last: 2
	// 2 answer: hi, what can I do?
	// 1 message: hello
}
