package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
)

// selectTable is the query reading every column of t in catalog order, jsonb
// as its JSON text.
func selectTable(schemaName string, t schema.Table) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range t.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pgx.Identifier{c.Name}.Sanitize())
		if c.Type == "jsonb" {
			b.WriteString("::text")
		}
	}
	b.WriteString(" FROM ")
	b.WriteString(pgx.Identifier{schemaName, t.Name}.Sanitize())
	return b.String()
}

// writeTable streams table t from tx into Parquet files of snapshot s. This
// goroutine decodes rows into Arrow records of at most BatchRows rows (or
// BatchBytes bytes) while the sink's goroutine encodes the previous record;
// the channel between them is unbuffered, so two records are alive at once
// whatever the table's size.
func (w *Writer) writeTable(ctx context.Context, tx pgx.Tx, s *snapshotRun, t schema.Table) (TableManifest, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rows, err := tx.Query(ctx, selectTable(w.schema, t), pgx.QueryExecModeDescribeExec)
	if err != nil {
		return TableManifest{}, fmt.Errorf("querying: %w", err)
	}
	defer rows.Close()
	sch := s.arrowSchema(t)
	rb := array.NewRecordBuilder(w.mem, sch)
	defer rb.Release()
	decs, err := newDecoders(t, rows.FieldDescriptions(), rb)
	if err != nil {
		return TableManifest{}, err
	}

	sink := &tableSink{w: w, table: t.Name, id: s.id, schema: sch}
	recs := make(chan batch)
	done := make(chan error, 1)
	go func() { done <- sink.consume(ctx, recs, cancel) }()
	readErr := w.readRecords(ctx, t, rows, decs, rb, recs)
	if readErr != nil {
		cancel(readErr) // the sink discards its part instead of finishing it
	}
	close(recs)
	if err := <-done; err != nil {
		sink.abort(ctx)
		return TableManifest{}, err
	}
	tm := TableManifest{Name: t.Name, Files: sink.files}
	for _, f := range sink.files {
		tm.Rows += f.Rows
		tm.Bytes += f.Bytes
	}
	return tm, nil
}

// batch is a record and the bytes its values took as PostgreSQL sent them,
// by which batches and row groups are sized.
type batch struct {
	rec   arrow.Record
	bytes int
}

// readRecords decodes rows into records and sends them on recs.
func (w *Writer) readRecords(ctx context.Context, t schema.Table, rows pgx.Rows, decs []decoder, rb *array.RecordBuilder, recs chan<- batch) error {
	n, size := 0, 0
	send := func() error {
		b := batch{rec: rb.NewRecord(), bytes: size}
		reserve(rb, b.rec)
		n, size = 0, 0
		select {
		case recs <- b:
			return nil
		case <-ctx.Done():
			b.rec.Release()
			return context.Cause(ctx)
		}
	}
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
			if err := send(); err != nil {
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
	if n > 0 {
		return send()
	}
	return nil
}

// tableSink receives a table's records and writes them as part files of at
// most FileRows rows.
type tableSink struct {
	w      *Writer
	table  string
	id     string
	schema *arrow.Schema
	format *fileFormat // decided on the first record
	enc    *columnEncoder
	file   *parquetFile
	files  []FileManifest
}

// consume writes every record received until recs is closed. After a
// failure it cancels the reader and drains the channel.
func (s *tableSink) consume(ctx context.Context, recs <-chan batch, cancel context.CancelCauseFunc) error {
	var err error
	for b := range recs {
		if err == nil {
			if err = s.write(ctx, b); err != nil {
				cancel(err)
			}
		}
		b.rec.Release()
	}
	if err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return s.finish(ctx)
}

// write appends a batch, starting a new part file every FileRows rows.
func (s *tableSink) write(ctx context.Context, b batch) error {
	rec := b.rec
	if err := s.prepare(rec); err != nil {
		return err
	}
	rowBytes := float64(b.bytes) / float64(max(rec.NumRows(), 1))
	for off := int64(0); off < rec.NumRows(); {
		if s.file == nil {
			if err := s.open(ctx); err != nil {
				return err
			}
		}
		n := min(rec.NumRows()-off, s.w.opts.FileRows-s.file.rows)
		part := rec
		if off != 0 || n != rec.NumRows() {
			part = rec.NewSlice(off, off+n)
		}
		err := s.file.write(ctx, part, rowBytes)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return err
		}
		off += n
		if s.file.rows == s.w.opts.FileRows {
			if err := s.close(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepare decides the file format from the first record (nil for a table
// with no rows).
func (s *tableSink) prepare(rec arrow.Record) error {
	if s.format != nil {
		return nil
	}
	dict := make([]bool, s.schema.NumFields())
	if rec != nil {
		dict = chooseDictionary(rec, s.w.opts.dictionary)
	}
	f, err := newFileFormat(s.schema, s.w.opts, dict, s.w.mem)
	if err != nil {
		return err
	}
	s.format = f
	s.enc = newColumnEncoder(s.schema, f.arrProps, s.w.opts.Workers)
	return nil
}

func (s *tableSink) open(ctx context.Context) error {
	f, err := createParquetFile(ctx, s.w.dest, partName(s.table, s.id, len(s.files)), s.format, s.enc, s.w.opts)
	if err != nil {
		return err
	}
	s.file = f
	return nil
}

func (s *tableSink) close(ctx context.Context) error {
	f := s.file
	s.file = nil
	size, err := f.commit(ctx)
	if err != nil {
		return err
	}
	s.files = append(s.files, FileManifest{Path: f.name, Rows: f.rows, Bytes: size})
	return nil
}

// finish commits the last part; a table without rows still gets one file,
// so readers see its schema.
func (s *tableSink) finish(ctx context.Context) error {
	if err := s.prepare(nil); err != nil {
		return err
	}
	if s.file == nil && len(s.files) == 0 {
		if err := s.open(ctx); err != nil {
			return err
		}
	}
	if s.file == nil {
		return nil
	}
	return s.close(ctx)
}

// abort discards the part being written. Committed parts are removed with
// the rest of the failed snapshot.
func (s *tableSink) abort(ctx context.Context) {
	if s.file != nil {
		if err := s.file.abort(context.WithoutCancel(ctx)); err != nil {
			s.w.log.WarnContext(ctx, "discarding a partial snapshot file", "table", s.table, "error", err)
		}
		s.file = nil
	}
}

// reserve sizes the builders for a record like rec, so that filling the
// next record does not grow (reallocate and copy) their buffers step by step.
func reserve(rb *array.RecordBuilder, rec arrow.Record) {
	rb.Reserve(int(rec.NumRows()))
	for i, b := range rb.Fields() {
		var bb *array.BinaryBuilder
		switch b := b.(type) {
		case *array.StringBuilder:
			bb = b.BinaryBuilder
		case *array.BinaryBuilder:
			bb = b
		default:
			continue
		}
		if bufs := rec.Column(i).Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
			bb.ReserveData(bufs[2].Len() + bufs[2].Len()/8)
		}
	}
}
