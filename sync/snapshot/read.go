package snapshot

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
)

// Reading (see "Reading" in doc.go): a table is read in chunks, one query
// each, shared round-robin among readers that all see the snapshot's
// snapshot; the writer takes the chunks' batches in chunk order.

// readers are the transactions a snapshot reads its tables with.
type readers struct {
	txs   []pgx.Tx        // txs[0] is the snapshot's own transaction
	conns []*pgxpool.Conn // of txs[1:]
}

// readerWait is how long Write waits for each additional reader's
// connection when the pool has none idle; it reads with fewer readers
// rather than hold its snapshot open waiting.
const readerWait = 2 * time.Second

// startReaders exports tx's snapshot and starts up to Readers-1 more
// transactions with it, on connections of the pool (never more than the
// pool's size less the one tx holds). JIT compilation is turned off in every
// reader: each chunk is a query of its own, and compiling the views' plans
// took longer than running them.
func (w *Writer) startReaders(ctx context.Context, tx pgx.Tx) (*readers, error) {
	rs := &readers{txs: []pgx.Tx{tx}}
	if _, err := tx.Exec(ctx, w.sql.jitOff); err != nil {
		return nil, fmt.Errorf("configuring the snapshot transaction: %w", err)
	}
	n := min(w.opts.Readers, int(w.pool.Config().MaxConns)-1)
	if n <= 1 {
		return rs, nil
	}
	var id string
	if err := tx.QueryRow(ctx, w.sql.exportSnapshot).Scan(&id); err != nil {
		return nil, fmt.Errorf("exporting the snapshot: %w", err)
	}
	if w.snapshotExported != nil {
		w.snapshotExported()
	}
	for len(rs.txs) < n {
		rtx, conn, err := w.startReader(ctx, id)
		if err != nil {
			rs.close(ctx)
			return nil, err
		}
		if conn == nil {
			w.log.WarnContext(ctx, "reading with fewer connections: the pool has none free", "readers", len(rs.txs), "wanted", n)
			break
		}
		rs.txs = append(rs.txs, rtx)
		rs.conns = append(rs.conns, conn)
	}
	return rs, nil
}

// startReader starts a transaction that imports snapshot id. It returns a
// nil connection if the pool had none free within readerWait.
func (w *Writer) startReader(ctx context.Context, id string) (pgx.Tx, *pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, readerWait)
	conn, err := w.pool.Acquire(actx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("acquiring a reader's connection: %w", err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err == nil {
		// The first statement of the transaction: it takes the snapshot.
		_, err = tx.Exec(ctx, w.sql.importing(id))
		if err == nil {
			_, err = tx.Exec(ctx, w.sql.jitOff)
		}
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx)) // the import's error is the one worth reporting
		}
	}
	if err != nil {
		conn.Release()
		return nil, nil, fmt.Errorf("importing the snapshot: %w", err)
	}
	return tx, conn, nil
}

// close ends the additional readers' transactions and returns their
// connections to the pool. The snapshot's own transaction is the caller's.
func (rs *readers) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for i, c := range rs.conns {
		_ = rs.txs[i+1].Rollback(ctx) // read only: nothing to lose; a broken connection is dropped by Release
		c.Release()
	}
	rs.conns, rs.txs = nil, rs.txs[:1]
}

// chunks returns the WHERE conditions of t's chunks for the readers rs, in
// order; a single "" reads the whole table in one query. One reader reads
// every table in one query: chunks would only leave the server idle between
// one and the next, while the reader drains the socket and sends the next
// query.
func (w *Writer) chunks(ctx context.Context, rs *readers, t schema.Table) ([]string, error) {
	if len(rs.txs) == 1 {
		return []string{""}, nil
	}
	return w.planChunks(ctx, rs.txs[0], t)
}

// planChunks returns the WHERE conditions of t's chunks, in order.
func (w *Writer) planChunks(ctx context.Context, tx pgx.Tx, t schema.Table) ([]string, error) {
	stats := func(table string) (blocks, size, rows int64, err error) {
		err = tx.QueryRow(ctx, w.sql.relationStats, pgx.Identifier{w.schema, table}.Sanitize()).Scan(&blocks, &size, &rows)
		if err != nil {
			err = fmt.Errorf("sizing %s: %w", table, err)
		}
		return blocks, size, rows, err
	}
	if !t.View {
		blocks, size, rows, err := stats(t.Name)
		if err != nil {
			return nil, err
		}
		return ctidChunks(blocks, w.chunkCount(size, rows)), nil
	}
	key, ok := viewKey(t)
	if !ok {
		return []string{""}, nil
	}
	_, size, rows, err := stats("users")
	if err != nil {
		return nil, err
	}
	n := w.chunkCount(size, rows)
	if n <= 1 {
		return []string{""}, nil
	}
	var lo, hi *int64
	if err := tx.QueryRow(ctx, w.sql.idRange).Scan(&lo, &hi); err != nil {
		return nil, fmt.Errorf("bounding the users' ids: %w", err)
	}
	if lo == nil || hi == nil {
		return []string{""}, nil
	}
	return keyChunks(pgx.Identifier{key}.Sanitize(), *lo, *hi, n), nil
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
// first range is open below and the last open above, so that every row
// version is in exactly one range whatever the table's size is now.
func ctidChunks(blocks int64, n int) []string {
	n = int(min(int64(n), blocks))
	if n <= 1 {
		return []string{""}
	}
	out := make([]string, n)
	bound := func(i int) int64 { return blocks * int64(i) / int64(n) }
	for i := range out {
		var conds []string
		if i > 0 {
			conds = append(conds, fmt.Sprintf("ctid >= '(%d,0)'::tid", bound(i)))
		}
		if i < n-1 {
			conds = append(conds, fmt.Sprintf("ctid < '(%d,0)'::tid", bound(i+1)))
		}
		out[i] = strings.Join(conds, " AND ")
	}
	return out
}

// keyChunks splits the ids from lo to hi into n ranges of column (a quoted
// identifier), after a chunk of the rows where it is NULL (none, where it is
// a primary key, but an index scan finds none quickly). The first range also
// takes every id below lo, the last every id above hi, so that every row is
// in exactly one chunk.
func keyChunks(column string, lo, hi int64, n int) []string {
	span := uint64(hi) - uint64(lo) // hi >= lo: exact, even across the sign
	if hi < lo || span < uint64(n) {
		n = 1
	}
	if n <= 1 {
		return []string{""}
	}
	bound := func(i int) int64 { // lo + span*i/n, without overflow
		h, l := bits.Mul64(span, uint64(i))
		q, _ := bits.Div64(h, l, uint64(n))
		return int64(uint64(lo) + q)
	}
	out := []string{column + " IS NULL"}
	for i := range n {
		switch i {
		case 0:
			out = append(out, fmt.Sprintf("%s < %d", column, bound(1)))
		case n - 1:
			out = append(out, fmt.Sprintf("%s >= %d", column, bound(i)))
		default:
			out = append(out, fmt.Sprintf("%s >= %d AND %s < %d", column, bound(i), column, bound(i+1)))
		}
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

// readTable reads t's chunks with the readers and calls write with its
// batches in chunk order, on this goroutine. Each reader decodes into its
// own builders and hands over one finished batch at a time; until write
// takes it, the reader waits, holding only that batch.
func (w *Writer) readTable(ctx context.Context, rs *readers, t schema.Table, sch *arrow.Schema, chunks []string, write func(batch) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	n := min(len(rs.txs), len(chunks))
	outs := make([]chan batch, n)
	var wg sync.WaitGroup
	for r := range n {
		outs[r] = make(chan batch)
		wg.Go(func() {
			defer close(outs[r])
			bb := newBatchBuilder(w.mem, sch)
			defer bb.release()
			for c := r; c < len(chunks); c += n {
				if w.chunkStarted != nil {
					w.chunkStarted(t.Name, r, c)
				}
				if err := w.readChunk(ctx, rs.txs[r], t, bb, chunks[c], outs[r]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	err := mergeChunks(ctx, outs, len(chunks), write)
	if err != nil {
		cancel(err)
	}
	for _, out := range outs { // unblock and drain the readers
		for b := range out {
			b.release()
		}
	}
	wg.Wait()
	if err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// mergeChunks passes the batches of chunks 0, 1, … in order to write: chunk
// c comes from outs[c % len(outs)], and its last batch has end set.
func mergeChunks(ctx context.Context, outs []chan batch, chunks int, write func(batch) error) error {
	for c := range chunks {
		in := outs[c%len(outs)]
		for end := false; !end; {
			var b batch
			var ok bool
			select {
			case b, ok = <-in:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if !ok { // the reader failed; its error is the context's cause
				<-ctx.Done()
				return context.Cause(ctx)
			}
			end = b.end
			if b.rec == nil {
				continue
			}
			if err := write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// readChunk reads the rows of t matching cond ("" for all) into records of at
// most BatchRows rows (or BatchBytes bytes) and sends them on out, the last
// (or an empty batch, for a chunk without rows) with end set.
func (w *Writer) readChunk(ctx context.Context, tx pgx.Tx, t schema.Table, bb *batchBuilder, cond string, out chan<- batch) error {
	rows, err := tx.Query(ctx, w.sql.reading(t, cond), pgx.QueryExecModeDescribeExec)
	if err != nil {
		return fmt.Errorf("querying: %w", err)
	}
	defer rows.Close()
	decs, err := newDecoders(t, rows.FieldDescriptions(), bb.rb)
	if err != nil {
		return err
	}
	return w.readRecords(ctx, t, rows, decs, bb, out)
}

// readRecords decodes rows into records and sends them on out, the last
// with end set (an empty batch if there were no rows).
func (w *Writer) readRecords(ctx context.Context, t schema.Table, rows pgx.Rows, decs []decoder, bb *batchBuilder, out chan<- batch) error {
	n, size := 0, 0
	send := func(end bool) error {
		b := batch{bytes: size, end: end}
		if n > 0 {
			b.rec = bb.record(!end)
		}
		n, size = 0, 0
		select {
		case out <- b:
		case <-ctx.Done():
			b.release()
			return context.Cause(ctx)
		}
		if !end {
			bb.reserve()
		}
		return nil
	}
	bb.reserve() // after the previous chunk's last record
	for rows.Next() {
		raw := rows.RawValues()
		for i, d := range decs {
			if err := d.decode(raw[i]); err != nil {
				return &ColumnError{Table: t.Name, Column: t.Columns[i].Name, Err: err}
			}
			size += len(raw[i])
		}
		n++
		if n >= w.opts.BatchRows || size >= w.opts.BatchBytes {
			if err := send(false); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return fmt.Errorf("reading rows: %w", err)
	}
	return send(true)
}
