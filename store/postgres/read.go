package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// Pages a read asks for: the first is a turn's tail with room to spare,
// each next one four times the last, up to lastPage rows. A page is a
// query with a LIMIT, so a read that stops early never has the server send
// (and pgx drain) the rest of a long conversation.
const (
	firstPage = 64
	lastPage  = 1024
)

const (
	forwardSQL  = `SELECT seq, event FROM lnk_events WHERE agent = $1 AND thread = $2 AND seq >= $3 ORDER BY seq LIMIT $4`
	backwardSQL = `SELECT seq, event FROM lnk_events WHERE agent = $1 AND thread = $2 AND seq <= $3 ORDER BY seq DESC LIMIT $4`
)

// binaryResults asks for both columns in the binary format: seq as 8 bytes,
// big-endian, and the event as its bytes, handed to fn without a copy.
var binaryResults = pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode}

// Read hands out the events from seq from, a page of rows at a time. Forward
// from 0 or less is the last event alone.
func (c *Conversation) Read(ctx context.Context, from int64, reverse bool, fn func(seq int64, event []byte) bool) error {
	query, page := forwardSQL, int64(firstPage)
	switch {
	case reverse:
		query = backwardSQL
		if from <= 0 {
			from = math.MaxInt64
		}
	case from <= 0:
		query, from, page = backwardSQL, math.MaxInt64, 1
	}
	for {
		n, next, stopped, err := c.page(ctx, query, from, page, fn)
		if err != nil {
			return c.errorf("read from %d: %w", from, err)
		}
		if stopped || n < page || page == 1 || next < 1 {
			return nil
		}
		from, page = next, min(4*page, lastPage)
	}
}

// page reads at most limit rows from seq from, and returns how many it
// read, the seq to read on from, and whether fn stopped it.
func (c *Conversation) page(ctx context.Context, query string, from, limit int64, fn func(int64, []byte) bool) (n, next int64, stopped bool, err error) {
	rows, err := c.d.pool.Query(ctx, query, binaryResults, c.d.agent, c.thread, from, limit)
	if err != nil {
		return 0, 0, false, err
	}
	defer rows.Close()
	var seq int64
	for rows.Next() {
		v := rows.RawValues()
		if len(v) != 2 || len(v[0]) != 8 {
			return n, 0, false, fmt.Errorf("a row of %d columns, its seq %d bytes", len(v), len(v[0]))
		}
		seq = int64(binary.BigEndian.Uint64(v[0]))
		n++
		if !fn(seq, v[1]) {
			return n, 0, true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return n, 0, false, err
	}
	if query == backwardSQL {
		return n, seq - 1, false, nil
	}
	return n, seq + 1, false, nil
}
