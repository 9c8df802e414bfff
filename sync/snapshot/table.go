package snapshot

import (
	"context"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/usersync/usersync/schema"
)

// writeTable streams table t, read by rs, into Parquet files of snapshot s.
// The readers decode rows into Arrow records of at most BatchRows rows (or
// BatchBytes bytes) while this goroutine encodes the previous record, so
// memory holds the record being encoded and about one per reader whatever
// the table's size.
func (w *Writer) writeTable(ctx context.Context, rs *readers, s *snapshotRun, t schema.Table) (TableManifest, error) {
	chunks, err := w.chunks(ctx, rs, t)
	if err != nil {
		return TableManifest{}, err
	}
	sch := s.arrowSchema(t)
	sink := &tableSink{w: w, table: t.Name, id: s.id, schema: sch}
	err = w.readTable(ctx, rs, t, sch, chunks, func(b batch) error {
		defer b.release()
		return sink.write(ctx, b)
	})
	if err == nil {
		err = context.Cause(ctx) // cancelled after the last row
	}
	if err == nil {
		err = sink.finish(ctx)
	}
	if err != nil {
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
// by which batches and row groups are sized. end marks the last batch of a
// chunk, whose rec is nil if the chunk had no rows.
type batch struct {
	rec   arrow.Record
	bytes int
	end   bool
}

// release releases the record, if any.
func (b batch) release() {
	if b.rec != nil {
		b.rec.Release()
	}
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
	s.files = append(s.files, FileManifest{Path: s.w.dest.rootName(f.name), Rows: f.rows, Bytes: size})
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

// batchBuilder is a reader's record builder, and the size of the last full
// record it built: after each record its builders are sized for one like it,
// so that filling the next does not grow (reallocate, copy and zero) their
// buffers step by step, even after a short record that ended a chunk.
type batchBuilder struct {
	rb   *array.RecordBuilder
	rows int
	data []int // per field, the bytes of a string or binary column's values
}

func newBatchBuilder(mem memory.Allocator, sch *arrow.Schema) *batchBuilder {
	return &batchBuilder{rb: array.NewRecordBuilder(mem, sch), data: make([]int, sch.NumFields())}
}

// record returns the record built so far. full says the record reached
// BatchRows or BatchBytes, which makes it the size the next is reserved for.
func (b *batchBuilder) record(full bool) arrow.Record {
	rec := b.rb.NewRecord()
	if full || b.rows == 0 {
		b.rows = int(rec.NumRows())
		for i := range b.data {
			b.data[i] = 0
			if bufs := rec.Column(i).Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
				b.data[i] = bufs[2].Len()
			}
		}
	}
	return rec
}

// reserve sizes the builders for a record like the last full one. It is
// called once the previous record is handed over, so that a reader waiting
// to hand one over holds only that one.
func (b *batchBuilder) reserve() {
	b.rb.Reserve(b.rows)
	for i, fb := range b.rb.Fields() {
		var bb *array.BinaryBuilder
		switch fb := fb.(type) {
		case *array.StringBuilder:
			bb = fb.BinaryBuilder
		case *array.BinaryBuilder:
			bb = fb
		default:
			continue
		}
		if b.data[i] > 0 {
			bb.ReserveData(b.data[i] + b.data[i]/8)
		}
	}
}

func (b *batchBuilder) release() { b.rb.Release() }
