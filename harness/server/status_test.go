package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"lnk.dev/linkharness/harness/home"
	"lnk.dev/linkharness/harness/model"
	"lnk.dev/linkharness/harness/settings"
	"lnk.dev/linkharness/harness/turn"
	"lnk.dev/linkharness/store"
)

func TestStatus(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("somewhere: %w", err) }
	for _, tt := range []struct {
		err  error
		want int
	}{
		{wrap(turn.ErrBadMessage), 400},
		{wrap(home.ErrBadName), 400},
		{wrap(store.ErrNotFound), 404},
		{wrap(turn.ErrThreadClash), 409},
		{wrap(store.ErrSeqTaken), 409},
		{wrap(store.ErrGap), 409},
		{wrap(store.ErrStaleLease), 409},
		{wrap(settings.ErrBadSpec), 500},
		{wrap(model.ErrTooLong), 502},
		{wrap(model.ErrStalled), 502},
		{wrap(model.ErrCut), 502},
		{wrap(model.ErrMalformed), 502},
		{wrap(model.ErrUnreachable), 502},
		{wrap(&model.StatusError{Provider: "anthropic", Code: 500}), 502},
		{wrap(&model.StatusError{Provider: "anthropic", Code: 400, Message: "prompt is too long"}), 502},
		{wrap(model.ErrTooLarge), 502},
		{wrap(model.ErrTimeout), 504},
		{fmt.Errorf("%w: %w", turn.ErrStopped, context.Canceled), 503},
		{fmt.Errorf("%w of 1h0m0s: %w", turn.ErrTimeout, model.ErrCut), 504}, // the turn's time, whatever its call said
		{wrap(context.Canceled), 503},
		{wrap(store.ErrCorrupt), 500},
		{errors.New("anything else"), 500},
		{fmt.Errorf("%w and %w", store.ErrNotFound, turn.ErrBadMessage), 400}, // the table's order decides
	} {
		if got := status(tt.err); got != tt.want {
			t.Errorf("status(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
