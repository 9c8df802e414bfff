package snapshot

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
)

// Rows are compared as canonical strings, one per row, sorted: the same
// text for the same value whichever side it was read from. Timestamps are
// compared as microseconds since the Unix epoch.

// pgRows reads every row of t from PostgreSQL, canonically.
func pgRows(t testing.TB, pool *pgxpool.Pool, schemaName string, tbl schema.Table) []string {
	t.Helper()
	q, err := newStatements(schemaName)
	if err != nil {
		t.Fatal(err)
	}
	read, _ := q.reading(tbl, chunk{kind: wholeTable})
	rows, err := pool.Query(context.Background(), read)
	if err != nil {
		t.Fatalf("querying %s: %v", tbl.Name, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatalf("reading %s: %v", tbl.Name, err)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = canonicalPG(t, v)
		}
		out = append(out, strings.Join(cells, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading %s: %v", tbl.Name, err)
	}
	slices.Sort(out)
	return out
}

func canonicalPG(t testing.TB, v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return fmt.Sprintf("int:%d", v)
	case bool:
		return fmt.Sprintf("bool:%t", v)
	case string:
		return fmt.Sprintf("text:%q", v)
	case time.Time:
		return fmt.Sprintf("ts:%d", v.UnixMicro())
	case []byte:
		return "bytes:" + hex.EncodeToString(v)
	case []any:
		elems := make([]string, len(v))
		for i, e := range v {
			elems[i] = canonicalPG(t, e)
		}
		return "[" + strings.Join(elems, ", ") + "]"
	}
	t.Fatalf("no canonical form for %T", v)
	return ""
}

func canonicalArrow(t testing.TB, arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	switch a := arr.(type) {
	case *array.Int64:
		return fmt.Sprintf("int:%d", a.Value(i))
	case *array.Boolean:
		return fmt.Sprintf("bool:%t", a.Value(i))
	case *array.String:
		return fmt.Sprintf("text:%q", a.Value(i))
	case *array.Timestamp:
		return fmt.Sprintf("ts:%d", a.Value(i))
	case *array.Binary:
		return "bytes:" + hex.EncodeToString(a.Value(i))
	case *array.List:
		b, e := a.ValueOffsets(i)
		elems := make([]string, 0, e-b)
		for j := b; j < e; j++ {
			elems = append(elems, canonicalArrow(t, a.ListValues(), int(j)))
		}
		return "[" + strings.Join(elems, ", ") + "]"
	}
	t.Fatalf("no canonical form for %T", arr)
	return ""
}

// canonicalCell is canonicalArrow, but for a JSON column, which pqarrow v15
// reads as binary (Parquet's JSON logical type), whose bytes are the text.
func canonicalCell(t testing.TB, f arrow.Field, arr arrow.Array, i int) string {
	if b, ok := arr.(*array.Binary); ok && isJSONField(f) && !b.IsNull(i) {
		return fmt.Sprintf("text:%q", b.ValueString(i))
	}
	return canonicalArrow(t, arr, i)
}

func isJSONField(f arrow.Field) bool {
	ext, _ := f.Metadata.GetValue(schema.MetaExtensionName)
	return ext == schema.JSONExtension
}

// readFile is what a test learns from one file of a snapshot.
type readFile struct {
	schema   *arrow.Schema
	kv       metadata.KeyValueMetadata
	rows     int64
	rowGroup int
	codecs   []string // compression of each column of the first row group
	logical  []string // the Parquet logical type of each column
}

// snapshotRows reads every file of a table of a snapshot with pqarrow and
// returns its rows canonically, sorted, and what each file says about itself.
func snapshotRows(t testing.TB, dest Destination, tm TableManifest) ([]string, []readFile) {
	t.Helper()
	out, files := readSnapshotRows(t, dest, tm)
	slices.Sort(out)
	return out, files
}

// readSnapshotRows is snapshotRows with the rows in the files' order.
func readSnapshotRows(t testing.TB, dest Destination, tm TableManifest) ([]string, []readFile) {
	t.Helper()
	ctx := context.Background()
	var out []string
	var files []readFile
	for _, f := range tm.Files {
		r, err := dest.Open(ctx, f.Path)
		if err != nil {
			t.Fatalf("opening %s: %v", f.Path, err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("reading %s: %v", f.Path, err)
		}
		if int64(len(data)) != f.Bytes {
			t.Errorf("%s: %d bytes, manifest says %d", f.Path, len(data), f.Bytes)
		}
		pr, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("opening %s as Parquet: %v", f.Path, err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 100}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("reading %s with pqarrow: %v", f.Path, err)
		}
		sch, err := fr.Schema()
		if err != nil {
			t.Fatalf("schema of %s: %v", f.Path, err)
		}
		rf := readFile{schema: sch, kv: pr.MetaData().KeyValueMetadata(), rows: pr.NumRows(), rowGroup: pr.NumRowGroups()}
		for c := range pr.MetaData().Schema.NumColumns() {
			rf.logical = append(rf.logical, pr.MetaData().Schema.Column(c).LogicalType().String())
		}
		if pr.NumRowGroups() > 0 {
			rg := pr.MetaData().RowGroup(0)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				rf.codecs = append(rf.codecs, cc.Compression().String())
			}
		}
		files = append(files, rf)
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			t.Fatalf("record reader of %s: %v", f.Path, err)
		}
		n := int64(0)
		for rr.Next() {
			rec := rr.Record()
			for i := range int(rec.NumRows()) {
				cells := make([]string, rec.NumCols())
				for c := range cells {
					cells[c] = canonicalCell(t, rec.Schema().Field(c), rec.Column(c), i)
				}
				out = append(out, strings.Join(cells, " | "))
			}
			n += rec.NumRows()
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("reading records of %s: %v", f.Path, err)
		}
		rr.Release()
		if n != f.Rows {
			t.Errorf("%s: read %d rows, manifest says %d", f.Path, n, f.Rows)
		}
	}
	return out, files
}

// sameRows reports the first differences between two sorted row lists.
func sameRows(t testing.TB, table string, want, got []string) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: %d rows in PostgreSQL, %d in the snapshot", table, len(want), len(got))
	}
	shown := 0
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] && shown < 3 {
			t.Errorf("%s: row %d differs:\npostgres: %.600s\nsnapshot: %.600s", table, i, want[i], got[i])
			shown++
		}
	}
}

// tableByName returns a catalog table or fails.
// tableByName returns the catalog table name as snapshots hold it (its
// snapshot columns).
func tableByName(t testing.TB, name string) schema.Table {
	t.Helper()
	tbl, ok := schema.TableNamed(name)
	if !ok {
		t.Fatalf("no table %s", name)
	}
	tbl.Columns = tbl.SnapshotColumns()
	return tbl
}

// kvValue returns a key of a file's key-value metadata.
func kvValue(kv metadata.KeyValueMetadata, key string) (string, bool) {
	v := kv.FindValue(key)
	if v == nil {
		return "", false
	}
	return *v, true
}

// arrowTypesEqual compares Arrow types, list element names included.
func arrowTypesEqual(a, b arrow.DataType) bool { return arrow.TypeEqual(a, b) }
