package snapshot

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/usersync/usersync/schema"
)

// pgArray encodes a one-dimensional array in PostgreSQL's binary format;
// nil elements are NULL.
func pgArray(oid uint32, elems ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, oid)
	b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
	b = binary.BigEndian.AppendUint32(b, 1)
	for _, e := range elems {
		if e == nil {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

func int8Bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// decodeOne decodes values into a one-field record and returns the array.
func decodeOne(t *testing.T, c schema.Column, values ...[]byte) (arrow.Array, error) {
	t.Helper()
	sch := arrow.NewSchema([]arrow.Field{{Name: c.Name, Type: schema.ArrowType(c.Type), Nullable: c.Nullable}}, nil)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sch)
	defer rb.Release()
	d := newDecoder(c, rb.Field(0))
	for _, v := range values {
		if err := d.decode(v); err != nil {
			return nil, err
		}
	}
	rec := rb.NewRecord()
	t.Cleanup(rec.Release)
	return rec.Column(0), nil
}

func TestDecode(t *testing.T) {
	t.Parallel()
	col := func(typ string, nullable bool) schema.Column {
		return schema.Column{Name: "c", Type: typ, Nullable: nullable}
	}
	for _, tc := range []struct {
		name   string
		col    schema.Column
		values [][]byte
		want   string // the array's String()
		err    error
	}{
		{"bigint", col("bigint", true), [][]byte{int8Bytes(-2), nil, int8Bytes(math.MaxInt64)}, "[-2 (null) 9223372036854775807]", nil},
		{"bigint NOT NULL gets NULL", col("bigint", false), [][]byte{nil}, "", errNull},
		{"boolean", col("boolean", true), [][]byte{{1}, {0}, nil}, "[true false (null)]", nil},
		{"text", col("text", true), [][]byte{[]byte("é"), {}, nil}, `["é" "" (null)]`, nil},
		{"timestamptz epochs", col("timestamptz", false), [][]byte{int8Bytes(0), int8Bytes(-pgEpochMicros)},
			"[946684800000000 0]", nil},
		{"infinity", col("timestamptz", true), [][]byte{int8Bytes(math.MaxInt64)}, "", errInfinite},
		{"-infinity", col("timestamptz", true), [][]byte{int8Bytes(math.MinInt64)}, "", errInfinite},
		{"bigint[]", col("bigint[]", true), [][]byte{pgArray(pgtype.Int8OID, int8Bytes(3), nil, int8Bytes(-1)), nil,
			binary.BigEndian.AppendUint64(make([]byte, 4), uint64(pgtype.Int8OID))}, // ndim 0: empty
			"[[3 (null) -1] (null) []]", nil},
		{"text[]", col("text[]", true), [][]byte{pgArray(pgtype.TextOID, []byte("a"), nil, []byte{})}, `[["a" (null) ""]]`, nil},
		{"short bigint", col("bigint", true), [][]byte{{1, 2}}, "", nil},
		{"truncated array", col("bigint[]", true), [][]byte{pgArray(pgtype.Int8OID, int8Bytes(3))[:26]}, "", nil},
		{"two dimensions", col("text[]", true), [][]byte{append(binary.BigEndian.AppendUint32(nil, 2), make([]byte, 24)...)}, "", nil},
	} {
		arr, err := decodeOne(t, tc.col, tc.values...)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s: decoded %v, want an error", tc.name, arr)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
		case tc.want != "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && arr.String() != tc.want:
			t.Errorf("%s: decoded %s, want %s", tc.name, arr, tc.want)
		}
	}
}

// FuzzDecodeArray feeds arbitrary bytes to the array decoders: they must
// return an error or decode, never panic or read out of bounds.
func FuzzDecodeArray(f *testing.F) {
	f.Add(pgArray(pgtype.Int8OID, int8Bytes(1), nil))
	f.Add(pgArray(pgtype.TextOID, []byte("x"), []byte{}))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		for _, typ := range []string{"bigint[]", "text[]"} {
			_, _ = decodeOne(t, schema.Column{Name: "c", Type: typ, Nullable: true}, v)
		}
	})
}
