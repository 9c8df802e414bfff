package snapshot

import (
	"context"
	"errors"
	"fmt"
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

// readTable reads t's chunks with the readers and calls write with its
// batches in chunk order, on this goroutine. Each reader decodes into its
// own builders and hands over one finished batch at a time; until write
// takes it, the reader waits, holding only that batch.
func (w *Writer) readTable(ctx context.Context, rs *readers, t schema.Table, sch *arrow.Schema, chunks []chunk, write func(batch) error) error {
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

// readChunk reads the rows of t in chunk c into records of at
// most BatchRows rows (or BatchBytes bytes) and sends them on out, the last
// (or an empty batch, for a chunk without rows) with end set.
func (w *Writer) readChunk(ctx context.Context, tx pgx.Tx, t schema.Table, bb *batchBuilder, c chunk, out chan<- batch) error {
	query, args := w.sql.reading(t, c)
	rows, err := tx.Query(ctx, query, append([]any{pgx.QueryExecModeDescribeExec}, args...)...)
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
