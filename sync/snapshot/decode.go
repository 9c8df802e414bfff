package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/usersync/usersync/schema"
)

// Rows are read with rows.RawValues in PostgreSQL's binary format and decoded
// straight into the Arrow builders: no value is boxed into an interface or
// copied into an intermediate Go value, so reading allocates only what the
// builders grow by.

// decoder appends one PostgreSQL value (nil for NULL) to an Arrow builder.
type decoder interface {
	decode(v []byte) error
}

// pgEpochMicros is 2000-01-01T00:00:00Z, PostgreSQL's timestamp epoch, in
// microseconds since the Unix epoch.
const pgEpochMicros = 946_684_800_000_000

var (
	errNull     = errors.New("NULL in a NOT NULL column")
	errInfinite = errors.New("infinite timestamp cannot be written to Parquet")
)

// acceptedOIDs are the PostgreSQL types each catalog type may be read as.
// jsonb columns are selected as col::text.
var acceptedOIDs = map[string][]uint32{
	"bigint":      {pgtype.Int8OID},
	"boolean":     {pgtype.BoolOID},
	"text":        {pgtype.TextOID, pgtype.VarcharOID},
	"jsonb":       {pgtype.TextOID},
	"timestamptz": {pgtype.TimestamptzOID},
	"bytea":       {pgtype.ByteaOID},
	"bigint[]":    {pgtype.Int8ArrayOID},
	"text[]":      {pgtype.TextArrayOID, pgtype.VarcharArrayOID},
}

// newDecoders checks the query's result columns against the catalog and
// returns one decoder per column, appending to the record builder's fields.
func newDecoders(t schema.Table, fields []pgconn.FieldDescription, rb *array.RecordBuilder) ([]decoder, error) {
	if len(fields) != len(t.Columns) {
		return nil, fmt.Errorf("table %s: the query returned %d columns, the catalog has %d", t.Name, len(fields), len(t.Columns))
	}
	decs := make([]decoder, len(fields))
	for i, c := range t.Columns {
		f := fields[i]
		if !slices.Contains(acceptedOIDs[c.Type], f.DataTypeOID) {
			return nil, &ColumnError{Table: t.Name, Column: c.Name, Err: fmt.Errorf("database type OID %d is not the catalog's %s", f.DataTypeOID, c.Type)}
		}
		if f.Format != pgtype.BinaryFormatCode && c.Type != "text" && c.Type != "jsonb" {
			return nil, &ColumnError{Table: t.Name, Column: c.Name, Err: fmt.Errorf("result format %d is not binary", f.Format)}
		}
		decs[i] = newDecoder(c, rb.Field(i))
	}
	return decs, nil
}

func newDecoder(c schema.Column, b array.Builder) decoder {
	n := nullability{nullable: c.Nullable}
	switch c.Type {
	case "bigint":
		return &int64Decoder{n, b.(*array.Int64Builder)}
	case "boolean":
		return &boolDecoder{n, b.(*array.BooleanBuilder)}
	case "text", "jsonb":
		return &bytesDecoder{n, b.(*array.StringBuilder).BinaryBuilder}
	case "bytea":
		return &bytesDecoder{n, b.(*array.BinaryBuilder)}
	case "timestamptz":
		return &timestampDecoder{n, b.(*array.TimestampBuilder)}
	case "bigint[]":
		lb := b.(*array.ListBuilder)
		return &arrayDecoder{n, lb, &int64Decoder{nullability{nullable: true}, lb.ValueBuilder().(*array.Int64Builder)}}
	case "text[]":
		lb := b.(*array.ListBuilder)
		return &arrayDecoder{n, lb, &bytesDecoder{nullability{nullable: true}, lb.ValueBuilder().(*array.StringBuilder).BinaryBuilder}}
	}
	panic("snapshot: no decoder for " + c.Type) // programmer error: the catalog uses only the types above
}

// nullability appends a NULL or refuses it.
type nullability struct{ nullable bool }

func (n nullability) null(b array.Builder) error {
	if !n.nullable {
		return errNull
	}
	b.AppendNull()
	return nil
}

func lengthError(want, got int) error {
	return fmt.Errorf("binary value of %d bytes, want %d", got, want)
}

type int64Decoder struct {
	nullability
	b *array.Int64Builder
}

func (d *int64Decoder) decode(v []byte) error {
	if v == nil {
		return d.null(d.b)
	}
	if len(v) != 8 {
		return lengthError(8, len(v))
	}
	d.b.Append(int64(binary.BigEndian.Uint64(v)))
	return nil
}

type boolDecoder struct {
	nullability
	b *array.BooleanBuilder
}

func (d *boolDecoder) decode(v []byte) error {
	if v == nil {
		return d.null(d.b)
	}
	if len(v) != 1 {
		return lengthError(1, len(v))
	}
	d.b.Append(v[0] != 0)
	return nil
}

// bytesDecoder appends text (the same bytes in text and binary format) and
// bytea values; Append copies them out of pgx's read buffer.
type bytesDecoder struct {
	nullability
	b *array.BinaryBuilder
}

func (d *bytesDecoder) decode(v []byte) error {
	if v == nil {
		return d.null(d.b)
	}
	d.b.Append(v)
	return nil
}

// timestampDecoder turns PostgreSQL's microseconds since 2000 into Arrow's
// microseconds since 1970.
type timestampDecoder struct {
	nullability
	b *array.TimestampBuilder
}

func (d *timestampDecoder) decode(v []byte) error {
	if v == nil {
		return d.null(d.b)
	}
	if len(v) != 8 {
		return lengthError(8, len(v))
	}
	us := int64(binary.BigEndian.Uint64(v))
	if us == math.MaxInt64 || us == math.MinInt64 {
		return errInfinite
	}
	d.b.Append(arrow.Timestamp(us + pgEpochMicros))
	return nil
}

// arrayDecoder reads a one-dimensional array in binary format: ndim, a
// has-nulls flag, the element OID, per dimension its length and lower bound,
// then each element as a length (-1 for NULL) and its bytes.
type arrayDecoder struct {
	nullability
	b    *array.ListBuilder
	elem decoder
}

func (d *arrayDecoder) decode(v []byte) error {
	if v == nil {
		return d.null(d.b)
	}
	if len(v) < 12 {
		return lengthError(12, len(v))
	}
	ndim := binary.BigEndian.Uint32(v)
	d.b.Append(true)
	if ndim == 0 {
		return nil
	}
	if ndim != 1 {
		return fmt.Errorf("array of %d dimensions, want 1", ndim)
	}
	if len(v) < 20 {
		return lengthError(20, len(v))
	}
	n := int(binary.BigEndian.Uint32(v[12:]))
	v = v[20:]
	for range n {
		if len(v) < 4 {
			return errors.New("truncated array")
		}
		size := int32(binary.BigEndian.Uint32(v))
		v = v[4:]
		if size < 0 {
			if err := d.elem.decode(nil); err != nil {
				return err
			}
			continue
		}
		if int(size) > len(v) {
			return errors.New("truncated array element")
		}
		if err := d.elem.decode(v[:size:size]); err != nil {
			return err
		}
		v = v[size:]
	}
	return nil
}
