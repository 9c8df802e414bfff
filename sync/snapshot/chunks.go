package snapshot

import (
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/usersync/usersync/schema"
)

// chunkKind says which statement of sql/snapshot.sql reads a chunk.
type chunkKind int

const (
	wholeTable chunkKind = iota // selectTable: every row
	blockRange                  // selectBlocks: the rows in heap blocks [from, to)
	keyRange                    // selectKeys: the rows whose key is in [from, to]
	keyNull                     // selectKeyNull: the rows whose key is NULL
)

// chunk is the share of a table one query reads. Its bounds are the
// statement's parameters, never text in the query: block numbers for a
// blockRange, user ids for a keyRange, whose bounds are both included so
// that the last range reaches math.MaxInt64.
type chunk struct {
	kind     chunkKind
	key      string // the key column's name (keyRange, keyNull)
	from, to int64
}

// lastBlock ends the last blockRange: one past the largest block number a
// relation can have, and still a valid tid.
const lastBlock = math.MaxUint32

// args are c's parameters in the order its statement takes them.
func (c chunk) args() []any {
	switch c.kind {
	case blockRange:
		tid := func(block int64) pgtype.TID { return pgtype.TID{BlockNumber: uint32(block), Valid: true} }
		return []any{tid(c.from), tid(c.to)}
	case keyRange:
		return []any{c.from, c.to}
	}
	return nil
}

// chunks returns t's chunks for the readers rs, in order. One reader
// reads every table in one query: chunks would only leave the server idle
// between one and the next, while the reader drains the socket and sends
// the next query.
func (w *Writer) chunks(ctx context.Context, rs *readers, t schema.Table) ([]chunk, error) {
	if len(rs.txs) == 1 {
		return []chunk{{kind: wholeTable}}, nil
	}
	return w.planChunks(ctx, rs.txs[0], t)
}

// planChunks returns t's chunks, in order.
func (w *Writer) planChunks(ctx context.Context, tx pgx.Tx, t schema.Table) ([]chunk, error) {
	stats := func(table string) (blocks, size, rows int64, err error) {
		err = tx.QueryRow(ctx, w.sql.relationStats, pgx.Identifier{w.schema, table}.Sanitize()).Scan(&blocks, &size, &rows)
		if err != nil {
			err = fmt.Errorf("sizing %s: %w", table, err)
		}
		return blocks, size, rows, err
	}
	whole := []chunk{{kind: wholeTable}}
	if !t.View {
		blocks, size, rows, err := stats(t.Name)
		if err != nil {
			return nil, err
		}
		return ctidChunks(blocks, w.chunkCount(size, rows)), nil
	}
	key, ok := viewKey(t)
	if !ok {
		return whole, nil
	}
	_, size, rows, err := stats("users")
	if err != nil {
		return nil, err
	}
	n := w.chunkCount(size, rows)
	if n <= 1 {
		return whole, nil
	}
	var lo, hi *int64
	if err := tx.QueryRow(ctx, w.sql.idRange).Scan(&lo, &hi); err != nil {
		return nil, fmt.Errorf("bounding the users' ids: %w", err)
	}
	if lo == nil || hi == nil {
		return whole, nil
	}
	return keyChunks(key, *lo, *hi, n), nil
}

// chunkCount is how many chunks a relation of size bytes and rows
// estimated rows is read in: one per BatchBytes (or chunkBytes) of storage or
// BatchRows rows, whichever gives more.
func (w *Writer) chunkCount(size, rows int64) int {
	target := int64(w.opts.BatchBytes)
	if w.opts.chunkBytes > 0 {
		target = int64(w.opts.chunkBytes)
	}
	n := (size + target - 1) / target
	if rows > 0 {
		n = max(n, (rows+int64(w.opts.BatchRows)-1)/int64(w.opts.BatchRows))
	}
	return int(max(n, 1))
}

// ctidChunks splits blocks heap blocks into n ranges of whole blocks. The
// first range starts at block 0 and the last ends at lastBlock, so that
// every row version is in exactly one range whatever the table's size is
// now.
func ctidChunks(blocks int64, n int) []chunk {
	n = int(min(int64(n), blocks))
	if n <= 1 {
		return []chunk{{kind: wholeTable}}
	}
	out := make([]chunk, n)
	for i := range out {
		out[i] = chunk{kind: blockRange, from: blocks * int64(i) / int64(n), to: blocks * int64(i+1) / int64(n)}
	}
	out[n-1].to = lastBlock
	return out
}

// keyChunks splits the ids from lo to hi into n ranges of the column key,
// after a chunk of the rows where it is NULL (none, where it is a primary
// key, but an index scan finds none quickly). The first range also takes
// every id below lo, the last every id above hi, so that every row is in
// exactly one chunk.
func keyChunks(key string, lo, hi int64, n int) []chunk {
	span := uint64(hi) - uint64(lo) // hi >= lo: exact, even across the sign
	if hi < lo || span < uint64(n) {
		n = 1
	}
	if n <= 1 {
		return []chunk{{kind: wholeTable}}
	}
	bound := func(i int) int64 { // lo + span*i/n, without overflow
		h, l := bits.Mul64(span, uint64(i))
		q, _ := bits.Div64(h, l, uint64(n))
		return int64(uint64(lo) + q)
	}
	out := []chunk{{kind: keyNull, key: key}}
	for i := range n {
		c := chunk{kind: keyRange, key: key, from: math.MinInt64, to: math.MaxInt64}
		if i > 0 {
			c.from = bound(i)
		}
		if i < n-1 {
			c.to = bound(i+1) - 1
		}
		out = append(out, c)
	}
	return out
}

// viewKey returns the user id column a view is split on: users_current's
// id, the user_id of the others. A view without one is read in one query.
func viewKey(t schema.Table) (string, bool) {
	if t.Name == "users_current" {
		return "id", true
	}
	for _, c := range t.Columns {
		if c.Name == "user_id" && c.Type == "bigint" {
			return c.Name, true
		}
	}
	return "", false
}
