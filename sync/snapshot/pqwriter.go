package snapshot

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	pqschema "github.com/apache/arrow/go/v15/parquet/schema"
	"github.com/klauspost/compress/zstd"
)

// Arrow v15's zstd codec builds a new encoder for every page it compresses
// (compress.zstdCodec.EncodeLevel): about 0.6 MB of tables for each of
// GOMAXPROCS encoders, plus a 16 MB history buffer for pages over 128 kB,
// allocated and zeroed each time. That was 70% of the bytes a snapshot of
// users allocated and a third of its CPU. Its file.Writer takes no other
// codec, so pqWriter assembles a Parquet file from the parts Arrow exports
// (the metadata builders, file.NewPageWriter and file.NewColumnChunkWriter)
// the way file.Writer does for an unencrypted file of buffered row groups,
// with page writers whose Compress uses a zstd.Encoder shared by the
// table's files: its encoders (one per column worker) are reused from page
// to page. The frames are Arrow's (EncodeAll, zero frames allowed) without
// the optional content checksum, which Parquet readers do not need (pages
// have their own CRC field, unused here as by Arrow); dictionary pages, one
// per dictionary-encoded column chunk, still go through Arrow's codec.

// parquetMagic starts and ends every Parquet file.
const parquetMagic = "PAR1"

// zstdWindow is the zstd window: how far back a match may be. Arrow's
// encoders use 8 MB, and each then holds a 16 MB history buffer; pages of
// a few hundred kB (a few MB for the raw JSON column) lose 0.2% of
// compression with 1 MB windows, and the encoders hold 2 MB each.
const zstdWindow = 1 << 20

// newZstdEncoder returns the encoder a table's data pages are compressed
// with, for up to workers pages at once.
func newZstdEncoder(level, workers int) (*zstd.Encoder, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithZeroFrames(true), zstd.WithEncoderConcurrency(workers), zstd.WithEncoderCRC(false), zstd.WithWindowSize(zstdWindow))
	if err != nil {
		return nil, fmt.Errorf("creating the zstd encoder: %w", err)
	}
	return enc, nil
}

// zstdPager is a page writer whose data pages are compressed by a shared,
// reused zstd encoder.
type zstdPager struct {
	file.PageWriter
	enc *zstd.Encoder
}

// Compress compresses src into buf, as Arrow's page writers do.
func (p zstdPager) Compress(buf *bytes.Buffer, src []byte) []byte {
	n := len(src)
	bound := n + n>>8 // zstd's compress bound (ZSTD_COMPRESSBOUND), as Arrow's codec has it
	if n < 128<<10 {
		bound += (128<<10 - n) >> 11
	}
	buf.Grow(bound)
	return p.enc.EncodeAll(src, buf.Bytes()[:0])
}

// tellWriter counts the bytes written through it: Arrow's page writers ask
// the sink for its position to record offsets.
type tellWriter struct {
	w io.Writer
	n int64
}

func (t *tellWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	return n, err
}

// Tell returns the number of bytes written.
func (t *tellWriter) Tell() int64 { return t.n }

// pqWriter writes one Parquet file of buffered row groups to w. Like
// file.Writer, it panics on some write failures of the page writers; its
// callers run it under guard.
type pqWriter struct {
	sink    *tellWriter
	props   *parquet.WriterProperties
	meta    *metadata.FileMetaDataBuilder
	zstd    *zstd.Encoder // nil unless the codec is zstd
	ordinal int16         // of the next row group
}

// newPQWriter writes the file's magic number and returns the writer.
func newPQWriter(w io.Writer, root *pqschema.GroupNode, props *parquet.WriterProperties, kv metadata.KeyValueMetadata, enc *zstd.Encoder) (*pqWriter, error) {
	pw := &pqWriter{sink: &tellWriter{w: w}, props: props, zstd: enc,
		meta: metadata.NewFileMetadataBuilder(pqschema.NewSchema(root), props, kv)}
	if _, err := io.WriteString(pw.sink, parquetMagic); err != nil {
		return nil, err
	}
	return pw, nil
}

// rowGroup is a buffered row group: every column's pages stay in memory
// until close writes them one column after the other.
type rowGroup struct {
	meta    *metadata.RowGroupMetaDataBuilder
	cols    []file.ColumnChunkWriter
	ordinal int16
}

// appendRowGroup starts the next row group.
func (pw *pqWriter) appendRowGroup() (*rowGroup, error) {
	rg := &rowGroup{meta: pw.meta.AppendRowGroup(), ordinal: pw.ordinal}
	pw.ordinal++
	for i := range rg.meta.NumColumns() {
		colMeta := rg.meta.NextColumnChunk()
		path := colMeta.Descr().Path()
		codec := pw.props.CompressionFor(path)
		pager, err := file.NewPageWriter(pw.sink, codec, pw.props.CompressionLevelFor(path), colMeta,
			rg.ordinal, int16(i), pw.props.Allocator(), true, nil, nil)
		if err != nil {
			return nil, err
		}
		if codec == compress.Codecs.Zstd && pw.zstd != nil {
			pager = zstdPager{PageWriter: pager, enc: pw.zstd}
		}
		rg.cols = append(rg.cols, file.NewColumnChunkWriter(colMeta, pager, pw.props))
	}
	return rg, nil
}

// Column returns the writer of column i.
func (rg *rowGroup) Column(i int) (file.ColumnChunkWriter, error) {
	if i < 0 || i >= len(rg.cols) {
		return nil, fmt.Errorf("no column %d in a row group of %d", i, len(rg.cols))
	}
	return rg.cols[i], nil
}

// close checks that every column has the same number of rows, then writes
// the columns' pages and records the row group's metadata.
func (rg *rowGroup) close() error {
	rows := 0
	for i, cw := range rg.cols {
		if i == 0 {
			rows = cw.RowsWritten()
		} else if cw.RowsWritten() != rows {
			return fmt.Errorf("column %d has %d rows, column 0 has %d", i, cw.RowsWritten(), rows)
		}
	}
	var written int64
	for _, cw := range rg.cols {
		if err := cw.Close(); err != nil {
			return err
		}
		written += cw.TotalBytesWritten()
	}
	rg.meta.SetNumRows(rows)
	return rg.meta.Finish(written, rg.ordinal)
}

// close writes the footer: the file's metadata, its length and the magic
// number.
func (pw *pqWriter) close() error {
	fm, err := pw.meta.Finish()
	if err != nil {
		return err
	}
	n, err := fm.WriteTo(pw.sink, nil)
	if err != nil {
		return err
	}
	tail := binary.LittleEndian.AppendUint32(make([]byte, 0, 8), uint32(n))
	_, err = pw.sink.Write(append(tail, parquetMagic...))
	return err
}
