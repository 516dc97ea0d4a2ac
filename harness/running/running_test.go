package running

import (
	"context"
	"errors"
	"sync"
	"testing"

	"lnk.dev/linkharness/store/event"
)

// A message sent while a turn holds its conversation is offered to that
// turn's inbox; taken, its sender is told the answer after it; one the
// turn never takes is handed back to wait for a turn of its own.
func TestSteer(t *testing.T) {
	var k Turns[string]
	ctx := context.Background()
	h, err := k.Lock(ctx, "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.In.SetThread("web:1")
	if th := k.Threads(); len(th) != 1 || th[0] != "web:1" {
		t.Errorf("running: %q", th)
	}
	offered := make(chan *Steer[string], 2)
	var senders sync.WaitGroup
	defer senders.Wait()
	steer := func(m string) {
		senders.Go(func() {
			held, err := k.Lock(ctx, "c", func(in *Inbox[string]) bool {
				s := in.Offer(m, nil)
				if s != nil {
					offered <- s
				}
				return s != nil
			})
			if held != nil || err != nil {
				t.Errorf("%s: held %v, %v; want it taken by the holder", m, held != nil, err)
			}
		})
	}
	steer("first")
	a := <-offered
	if w := h.In.Take(); len(w) != 1 || w[0].M != "first" {
		t.Fatalf("taken: %v", w)
	}
	h.In.Accept(a)
	steer("second")
	b := <-offered
	answer := &event.Event{Seq: 3, Type: event.TypeAnswer, Text: "both"}
	h.In.Answered(answer, true)
	h.In.Finish()
	if got := a.Wait(); got.Told != answer || !got.Shared || got.Refused {
		t.Errorf("the taken message told %+v", got)
	}
	if got := b.Wait(); !got.Refused {
		t.Errorf("the message never taken told %+v, want it handed back", got)
	}
	h.Unlock()
	senders.Wait() // a sender told its answer may not have left Lock yet
	if n := k.Len(); n != 0 {
		t.Errorf("%d conversations held after the turn", n)
	}
}

// A turn asked to end before it set how is ended once it does, with the
// cause it was asked with; one gone is not running.
func TestEnd(t *testing.T) {
	var k Turns[string]
	h, err := k.Lock(context.Background(), "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	asked := errors.New("asked to end")
	if !k.Holder("c").End(asked) {
		t.Fatal("the holding turn is not running")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	h.In.EndWith(cancel)
	if context.Cause(ctx) != asked {
		t.Errorf("ended with %v", context.Cause(ctx))
	}
	in := h.In
	h.Unlock()
	<-in.Gone()
	if in.End(asked) {
		t.Error("a turn gone ended")
	}
}
