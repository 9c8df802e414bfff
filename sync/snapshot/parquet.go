package snapshot

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/flight"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	pqschema "github.com/apache/arrow/go/v15/parquet/schema"
	"github.com/klauspost/compress/zstd"

	"github.com/usersync/usersync/schema"
)

// parquetBufferSize is the write buffer between the Parquet writer, which
// writes page headers and pages in many small pieces, and the destination.
const parquetBufferSize = 1 << 20

// fileFormat is what every file of one table shares: the Arrow schema (with
// the snapshot's metadata), the Parquet writer properties and schema, and
// the zstd encoder of the data pages (nil for the other codecs).
type fileFormat struct {
	arrow    *arrow.Schema
	props    *parquet.WriterProperties
	arrProps pqarrow.ArrowWriterProperties
	root     *pqschema.GroupNode
	kv       metadata.KeyValueMetadata
	zstd     *zstd.Encoder
}

// newFileFormat derives the Parquet layout of sch. dict says, per field,
// whether the column is dictionary encoded.
func newFileFormat(sch *arrow.Schema, opts Options, dict []bool, mem memory.Allocator) (*fileFormat, error) {
	props := writerProperties(sch, opts, dict, mem)
	arrProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem))
	root, err := parquetRoot(sch, props, arrProps)
	if err != nil {
		return nil, err
	}
	kv, err := fileMetadata(sch, mem)
	if err != nil {
		return nil, err
	}
	f := &fileFormat{arrow: sch, props: props, arrProps: arrProps, root: root, kv: kv}
	if opts.Compression == CompressionZstd {
		if f.zstd, err = newZstdEncoder(opts.CompressionLevel, opts.Workers); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// writerProperties are the Parquet writer's properties for opts.
func writerProperties(sch *arrow.Schema, opts Options, dict []bool, mem memory.Allocator) *parquet.WriterProperties {
	wp := []parquet.WriterProperty{
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy("usersync"),
		parquet.WithDataPageSize(int64(opts.PageBytes)),
		parquet.WithMaxRowGroupLength(math.MaxInt64), // row groups are cut by the writer
		parquet.WithDictionaryDefault(false),
	}
	if !opts.pageV1 {
		// Version 2 data pages. With version 1, Arrow v15 reserves a 4-byte
		// length prefix in front of the definition levels, and that offset
		// makes its level buffer reallocate and copy itself at every run
		// of levels: 80% of all bytes allocated by a snapshot of users went
		// there (75 kB per row). Version 2 pages store levels unprefixed and
		// uncompressed; every current reader (Arrow, DuckDB, Spark) reads them.
		wp = append(wp, parquet.WithDataPageVersion(parquet.DataPageV2))
	}
	if opts.writeBatch > 0 {
		wp = append(wp, parquet.WithBatchSize(int64(opts.writeBatch)))
	}
	switch opts.Compression {
	case CompressionZstd:
		wp = append(wp, parquet.WithCompression(compress.Codecs.Zstd), parquet.WithCompressionLevel(opts.CompressionLevel))
	case CompressionSnappy:
		wp = append(wp, parquet.WithCompression(compress.Codecs.Snappy))
	default:
		wp = append(wp, parquet.WithCompression(compress.Codecs.Uncompressed))
	}
	for i, f := range sch.Fields() {
		if dict[i] {
			wp = append(wp, parquet.WithDictionaryFor(f.Name, true))
		}
	}
	return parquet.NewWriterProperties(wp...)
}

// parquetRoot is the Parquet schema of sch: pqarrow's, with the JSON logical
// type on the columns ArrowSchema marks JSON, which pqarrow v15 does not
// derive (DuckDB reads those columns as JSON, Spark as strings).
func parquetRoot(sch *arrow.Schema, props *parquet.WriterProperties, arrProps pqarrow.ArrowWriterProperties) (*pqschema.GroupNode, error) {
	ps, err := pqarrow.ToParquet(sch, props, arrProps)
	if err != nil {
		return nil, fmt.Errorf("deriving the Parquet schema: %w", err)
	}
	if ps.NumColumns() != sch.NumFields() {
		// Every catalog type maps to exactly one leaf column; the encoder relies on it.
		return nil, fmt.Errorf("the Parquet schema has %d leaf columns for %d fields", ps.NumColumns(), sch.NumFields())
	}
	root := ps.Root()
	fields := make(pqschema.FieldList, root.NumFields())
	for i := range fields {
		fields[i] = root.Field(i)
		if ext, _ := sch.Field(i).Metadata.GetValue(schema.MetaExtensionName); ext != schema.JSONExtension {
			continue
		}
		n := fields[i]
		if fields[i], err = pqschema.NewPrimitiveNodeLogical(n.Name(), n.RepetitionType(), pqschema.JSONLogicalType{},
			parquet.Types.ByteArray, -1, n.FieldID()); err != nil {
			return nil, fmt.Errorf("typing column %s as JSON: %w", n.Name(), err)
		}
	}
	return pqschema.NewGroupNode(root.Name(), root.RepetitionType(), fields, root.FieldID())
}

// fileMetadata is the key-value metadata of every file: sch's, each field's
// meaning (MetaColumnMeaning), and the Arrow schema itself, as
// pqarrow.WithStoreSchema writes it, so that readers get
// timestamp[us, tz=UTC] and the field metadata back.
func fileMetadata(sch *arrow.Schema, mem memory.Allocator) (metadata.KeyValueMetadata, error) {
	md := sch.Metadata()
	kv := make(metadata.KeyValueMetadata, 0, md.Len()+sch.NumFields()+1)
	for i, k := range md.Keys() {
		if err := kv.Append(k, md.Values()[i]); err != nil {
			return nil, err
		}
	}
	for _, f := range sch.Fields() {
		if meaning, ok := f.Metadata.GetValue(schema.MetaMeaning); ok {
			if err := kv.Append(MetaColumnMeaning+f.Name, meaning); err != nil {
				return nil, err
			}
		}
	}
	if err := kv.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(sch, mem))); err != nil {
		return nil, err
	}
	return kv, nil
}

// parquetFile is one Parquet file being written to a destination object:
// buffered row groups of up to RowGroupRows rows or RowGroupBytes bytes,
// whose columns are encoded by the encoder's workers in parallel.
type parquetFile struct {
	name         string
	obj          Object
	count        *countingWriter
	buf          *bufio.Writer
	fw           *pqWriter
	rg           *rowGroup
	rgRows       int64
	rgBytes      float64
	rows         int64
	rowGroupRows int64
	rowGroupSize float64 // RowGroupBytes
	enc          *columnEncoder
}

// createParquetFile starts a Parquet file at name.
func createParquetFile(ctx context.Context, dest Destination, name string, f *fileFormat, enc *columnEncoder, opts Options) (*parquetFile, error) {
	obj, err := dest.Create(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	count := &countingWriter{w: obj}
	buf := bufio.NewWriterSize(count, parquetBufferSize)
	pf := &parquetFile{name: name, obj: obj, count: count, buf: buf, enc: enc,
		rowGroupRows: int64(opts.RowGroupRows), rowGroupSize: float64(opts.RowGroupBytes)}
	err = guard(func() (err error) {
		pf.fw, err = newPQWriter(buf, f.root, f.props, f.kv, f.zstd)
		return err
	})
	if err != nil {
		_ = obj.Abort(ctx) // the writer's error is the one worth reporting
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return pf, nil
}

// write appends rec's rows, whose values take rowBytes bytes each on
// average, cutting row groups at RowGroupRows rows or RowGroupBytes bytes.
func (pf *parquetFile) write(ctx context.Context, rec arrow.Record, rowBytes float64) error {
	for off := int64(0); off < rec.NumRows(); {
		if pf.rg == nil {
			err := guard(func() (err error) {
				pf.rg, err = pf.fw.appendRowGroup()
				return err
			})
			if err != nil {
				return fmt.Errorf("starting a row group of %s: %w", pf.name, err)
			}
			pf.rgRows, pf.rgBytes = 0, 0
		}
		n := min(rec.NumRows()-off, pf.rowGroupRows-pf.rgRows)
		if rowBytes > 0 {
			n = min(n, max(1, int64(math.Ceil((pf.rowGroupSize-pf.rgBytes)/rowBytes))))
		}
		part := rec
		if off != 0 || n != rec.NumRows() {
			part = rec.NewSlice(off, off+n)
		}
		err := pf.enc.write(ctx, pf.rg, part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return fmt.Errorf("encoding %s: %w", pf.name, err)
		}
		pf.rgRows += n
		pf.rgBytes += float64(n) * rowBytes
		pf.rows += n
		off += n
		if pf.rgRows >= pf.rowGroupRows || pf.rgBytes >= pf.rowGroupSize {
			if err := pf.closeRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeRowGroup flushes the buffered row group to the destination.
func (pf *parquetFile) closeRowGroup() error {
	if pf.rg == nil {
		return nil
	}
	rg := pf.rg
	pf.rg = nil
	if err := guard(rg.close); err != nil {
		return fmt.Errorf("writing a row group of %s: %w", pf.name, err)
	}
	if pf.count.err != nil {
		return fmt.Errorf("writing a row group of %s: %w", pf.name, pf.count.err)
	}
	return nil
}

// commit writes the footer and commits the object. It returns the file's
// size in bytes.
func (pf *parquetFile) commit(ctx context.Context) (int64, error) {
	err := pf.closeRowGroup()
	if err == nil {
		err = guard(pf.fw.close)
	}
	if err == nil {
		err = pf.buf.Flush()
	}
	if err == nil {
		err = pf.count.err
	}
	if err != nil {
		_ = pf.obj.Abort(ctx) // the write error is the one worth reporting
		return 0, fmt.Errorf("finishing %s: %w", pf.name, err)
	}
	if err := pf.obj.Commit(ctx); err != nil {
		return 0, fmt.Errorf("committing %s: %w", pf.name, err)
	}
	return pf.count.n, nil
}

// abort discards the file.
func (pf *parquetFile) abort(ctx context.Context) error {
	if err := pf.obj.Abort(ctx); err != nil {
		return fmt.Errorf("discarding %s: %w", pf.name, err)
	}
	return nil
}

// guard runs fn, turning a panic into an error: the Parquet writer panics on
// some write failures (e.g. "failed to write magic number") instead of
// returning them.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("parquet writer panicked: %w", e)
				return
			}
			err = fmt.Errorf("parquet writer panicked: %v", r)
		}
	}()
	return fn()
}
