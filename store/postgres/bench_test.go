package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"lnk.dev/linkharness/store"
	"lnk.dev/linkharness/store/postgres/pgtest"
	"lnk.dev/linkharness/store/storetest"
)

// filled opens thread "t" of a new agent holding n typical events, copied
// in at once so a long conversation is quick to make.
func filled(b *testing.B, n int64) store.Conversation {
	dir := b.TempDir()
	d := open(b, dir)
	b.Cleanup(func() { d.Close() })
	if n > 0 {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pgtest.URL(b))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		agent := storetest.Agent(dir)
		_, err = conn.CopyFrom(ctx, pgx.Identifier{"lnk_events"}, []string{"agent", "thread", "seq", "event"},
			pgx.CopyFromSlice(int(n), func(i int) ([]any, error) {
				seq := int64(i + 1)
				return []any{agent, "t", seq, storetest.TypicalEvent(seq)}, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "ANALYZE lnk_events"); err != nil {
			b.Fatal(err)
		}
	}
	c, err := d.Open("t")
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAppend appends typical events to a conversation holding
// events=N, each one transaction committed durably.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int64{1000, 100000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			storetest.BenchAppend(b, filled(b, n), n)
		})
	}
}

// BenchmarkReadLast32 reads a turn's tail, the last 32 events, of a
// conversation holding events=N.
func BenchmarkReadLast32(b *testing.B) {
	storetest.BenchReadLast32Sizes(b, filled)
}
