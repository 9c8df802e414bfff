package pgcopy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Type is the PostgreSQL type of a column COPY writes: it fixes the binary
// form of the column's values.
type Type uint8

// The types COPY writes.
const (
	Unknown Type = iota // a type this file cannot write: every value is refused
	Bigint
	Boolean
	Text
	Timestamptz
	JSONB
	Bytea
	BigintArray
)

// String returns the type's name as the catalog (schema.Column.Type) writes it.
func (t Type) String() string {
	switch t {
	case Bigint:
		return "bigint"
	case Boolean:
		return "boolean"
	case Text:
		return "text"
	case Timestamptz:
		return "timestamptz"
	case JSONB:
		return "jsonb"
	case Bytea:
		return "bytea"
	case BigintArray:
		return "bigint[]"
	}
	return "an unknown type"
}

// ColumnType returns the pgType of a catalog column type ("bigint", ...).
func ColumnType(sqlType string) Type {
	for t := Bigint; t <= BigintArray; t++ {
		if t.String() == sqlType {
			return t
		}
	}
	return Unknown
}

const (
	// copyHeader starts a binary COPY: the signature, then flags and the
	// length of the header extension, both 0.
	copyHeader = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"
	// pgEpochMicros is 2000-01-01T00:00:00Z, PostgreSQL's epoch, in
	// microseconds since the Unix epoch.
	pgEpochMicros = 946_684_800 * 1_000_000
	// int8OID is the type oid of bigint, which an array names its elements by.
	int8OID = 20
)

// Binary copies n rows with sql, a COPY ... FROM STDIN (FORMAT binary)
// statement: tuple appends row i to a buffer as a binary tuple. It returns
// the number of rows copied. The rows are encoded as the connection sends
// them, so memory holds one chunk of them, not the page.
func Binary(ctx context.Context, tx pgx.Tx, sql string, n int, tuple func(b []byte, i int) ([]byte, error)) (int64, error) {
	// The buffer has room for pgconn's 64 KiB read and the row that crosses
	// its end, so it seldom grows.
	r := &copyReader{n: n, tuple: tuple, buf: append(make([]byte, 0, 80<<10), copyHeader...)}
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, r, sql)
	if rerr := r.err.Load(); rerr != nil {
		// The server only heard that the COPY failed: this says why.
		return 0, *rerr
	}
	if err != nil {
		return 0, copyError(ctx, err)
	}
	return tag.RowsAffected(), nil
}

// copyError is the error of a COPY run under ctx. pgconn can lose a
// cancellation during a COPY: the cancelled context times out a write of
// its data, the writer closes the connection, and what reaches the caller is
// the next write's "use of closed network connection". The context's cause
// is put in front, so that errors.Is finds context.Canceled and a stopped
// run is not taken for a broken database (TestCopyErrorKeepsTheCancellation).
// Every COPY goes through copyBinary or copyFrom, which apply it.
func copyError(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", context.Cause(ctx), err)
}

// From is pgx's CopyFrom on c (a transaction or a connection), its
// error passed through copyError.
func From(ctx context.Context, c interface {
	CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
}, table pgx.Identifier, columns []string, src pgx.CopyFromSource) error {
	_, err := c.CopyFrom(ctx, table, columns, src)
	return copyError(ctx, err)
}

// copyReader is the data of a binary COPY, encoded as it is read: each Read
// encodes rows until its buffer holds what was asked for (pgconn asks for
// 64 KiB), so the buffer stays at about one chunk and one row.
type copyReader struct {
	n     int // rows to encode
	tuple func(b []byte, i int) ([]byte, error)
	next  int    // the next row to encode
	buf   []byte // buf[off:] is encoded and not yet read
	off   int
	done  bool // the trailer is in buf
	// err is the encoding error that stopped the COPY. pgconn reads in a
	// goroutine of its own, which can outlive CopyFrom when the connection
	// fails (a cancelled context): err is the one field both read.
	err atomic.Pointer[error]
}

func (r *copyReader) Read(p []byte) (int, error) {
	if err := r.err.Load(); err != nil {
		return 0, *err
	}
	if len(r.buf)-r.off < len(p) && !r.done {
		r.buf, r.off = append(r.buf[:0], r.buf[r.off:]...), 0
		for len(r.buf) < len(p) && r.next < r.n {
			b, err := r.tuple(r.buf, r.next)
			if err != nil {
				r.err.Store(&err)
				return 0, err
			}
			r.buf = b
			r.next++
		}
		if r.next == r.n {
			r.buf, r.done = binary.BigEndian.AppendUint16(r.buf, 0xffff), true // field count -1
		}
	}
	if r.off == len(r.buf) {
		return 0, io.EOF
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// AppendFieldCount starts a tuple of n fields.
func AppendFieldCount(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint16(b, uint16(n))
}

// AppendValue appends v as a field of type t; nil is NULL. It fails, leaving
// b as it was, when v's Go type is not the one normalize gives for t.
func AppendValue(b []byte, t Type, v any) ([]byte, error) {
	if v == nil {
		return AppendNull(b), nil
	}
	switch t {
	case Bigint:
		if n, ok := v.(int64); ok {
			return AppendBigint(b, n), nil
		}
	case Boolean:
		if x, ok := v.(bool); ok {
			return appendBoolean(b, x), nil
		}
	case Text:
		if s, ok := v.(string); ok {
			return appendText(b, s), nil
		}
	case Timestamptz:
		if ts, ok := v.(time.Time); ok {
			return AppendTimestamptz(b, ts), nil
		}
	case JSONB:
		if j, ok := v.([]byte); ok {
			return AppendJSONB(b, j), nil
		}
	case Bytea:
		if y, ok := v.([]byte); ok {
			return AppendBytea(b, y), nil
		}
	case BigintArray:
		if a, ok := v.([]int64); ok {
			return AppendBigintArray(b, a), nil
		}
	}
	return b, fmt.Errorf("a Go %T cannot be written as %s", v, t)
}

// AppendNull appends a NULL field.
func AppendNull(b []byte) []byte { return binary.BigEndian.AppendUint32(b, 0xffffffff) } // length -1

func appendLength(b []byte, n int) []byte { return binary.BigEndian.AppendUint32(b, uint32(n)) }

// AppendBigint appends n as a bigint field.
func AppendBigint(b []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(appendLength(b, 8), uint64(n))
}

// AppendNullableBigint appends n, or NULL when n is 0 (an unset id).
func AppendNullableBigint(b []byte, n int64) []byte {
	if n == 0 {
		return AppendNull(b)
	}
	return AppendBigint(b, n)
}

func appendBoolean(b []byte, x bool) []byte {
	b = appendLength(b, 1)
	if x {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendText(b []byte, s string) []byte { return append(appendLength(b, len(s)), s...) }

// AppendTimestamptz appends t as microseconds since 2000-01-01 UTC, the
// sub-microsecond part dropped as pgx drops it.
func AppendTimestamptz(b []byte, t time.Time) []byte {
	return AppendBigint(b, t.Unix()*1_000_000+int64(t.Nanosecond()/1000)-pgEpochMicros)
}

// AppendJSONB appends the JSON text j after jsonb's version byte; nil is NULL.
func AppendJSONB(b, j []byte) []byte {
	if j == nil {
		return AppendNull(b)
	}
	return append(append(appendLength(b, 1+len(j)), 1), j...)
}

// AppendBytea appends y; nil is NULL.
func AppendBytea(b, y []byte) []byte {
	if y == nil {
		return AppendNull(b)
	}
	return append(appendLength(b, len(y)), y...)
}

// AppendBigintArray appends a as a one-dimensional bigint[] without NULLs;
// nil is NULL and an empty slice the empty array, which has no dimension.
func AppendBigintArray(b []byte, a []int64) []byte {
	if a == nil {
		return AppendNull(b)
	}
	be := binary.BigEndian
	if len(a) == 0 {
		b = appendLength(b, 12)
		return be.AppendUint32(be.AppendUint32(be.AppendUint32(b, 0), 0), int8OID) // ndim, hasnull, element type
	}
	b = appendLength(b, 20+12*len(a))
	b = be.AppendUint32(be.AppendUint32(be.AppendUint32(b, 1), 0), int8OID)
	b = be.AppendUint32(be.AppendUint32(b, uint32(len(a))), 1) // length, lower bound
	for _, n := range a {
		b = AppendBigint(b, n)
	}
	return b
}
