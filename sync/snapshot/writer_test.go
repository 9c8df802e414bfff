package snapshot

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
)

// testLogger logs through t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// stepClock is a clock that moves a minute forward at every snapshot start
// (each call to next).
type stepClock struct{ t time.Time }

func (c *stepClock) now() time.Time { return c.t }
func (c *stepClock) next()          { c.t = c.t.Add(time.Minute) }

func newLocal(t testing.TB) (*Local, string) {
	t.Helper()
	dir := t.TempDir()
	dest, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dest, dir
}

func TestWriteRoundTrip(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 300)
	tables, err := snapshotTables(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		codec string
		parts int // files of the users table
	}{
		{"defaults", Options{}, "ZSTD", 1},
		{"small batches, row groups and files", Options{BatchRows: 7, RowGroupRows: 20, FileRows: 64, Workers: 3,
			Compression: CompressionSnappy}, "SNAPPY", 5},
		{"one worker, uncompressed, dictionary everywhere", Options{Workers: 1, Compression: CompressionNone,
			dictionary: dictionaryAll}, "UNCOMPRESSED", 1},
		{"no dictionary, small pages, batches and row groups", Options{PageBytes: 16 << 10, BatchBytes: 4096,
			RowGroupBytes: 64 << 10, Compression: CompressionSnappy, dictionary: dictionaryNone}, "SNAPPY", 1},
		{"zstd level 3, version 1 pages", Options{CompressionLevel: 3, pageV1: true}, "ZSTD", 1},
		{"three readers, chunks of a few rows", Options{Readers: 3, chunkBytes: 4 << 10, BatchRows: 5, FileRows: 100}, "ZSTD", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dest, _ := newLocal(t)
			w, err := New(pool, name, dest, testLogger(t), nil, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			m, err := w.Write(context.Background())
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if len(m.Tables) != len(tables) {
				t.Fatalf("manifest lists %d tables, want %d", len(m.Tables), len(tables))
			}
			for _, tbl := range tables {
				tm, ok := m.Table(tbl.Name)
				if !ok {
					t.Fatalf("manifest has no table %s", tbl.Name)
				}
				got, files := snapshotRows(t, dest, tm)
				sameRows(t, tbl.Name, pgRows(t, pool, name, tbl), got)
				for _, f := range files {
					checkFile(t, tbl, f, m, tc.codec)
				}
			}
			if users, _ := m.Table("users"); len(users.Files) != tc.parts {
				t.Errorf("users has %d files, want %d", len(users.Files), tc.parts)
			}
		})
	}
}

// checkFile checks a file's Arrow schema (types, nullability, meanings) and
// its key-value metadata against the catalog and the manifest.
func checkFile(t *testing.T, tbl schema.Table, f readFile, m Manifest, codec string) {
	t.Helper()
	if f.schema.NumFields() != len(tbl.Columns) {
		t.Fatalf("%s: %d fields, want %d", tbl.Name, f.schema.NumFields(), len(tbl.Columns))
	}
	for i, c := range tbl.Columns {
		fl := f.schema.Field(i)
		want, logical := schema.ArrowType(c.Type), "String"
		if c.Type == "jsonb" {
			// Parquet's JSON logical type, which pqarrow v15 reads as binary.
			want, logical = arrow.BinaryTypes.Binary, "JSON"
		}
		if fl.Name != c.Name || !arrowTypesEqual(fl.Type, want) || fl.Nullable != c.Nullable {
			t.Errorf("%s field %d is %s %s nullable=%t, want %s %s nullable=%t", tbl.Name, i, fl.Name, fl.Type,
				fl.Nullable, c.Name, want, c.Nullable)
		}
		if got := f.logical[i]; (c.Type == "jsonb" || c.Type == "text") && got != logical {
			t.Errorf("%s.%s (%s): Parquet logical type %s, want %s", tbl.Name, c.Name, c.Type, got, logical)
		}
		if got, _ := fl.Metadata.GetValue(schema.MetaMeaning); got != c.Meaning {
			t.Errorf("%s.%s meaning %q, want %q", tbl.Name, c.Name, got, c.Meaning)
		}
		// Readers that skip the stored Arrow schema (DuckDB) read it here.
		if got, ok := kvValue(f.kv, MetaColumnMeaning+c.Name); !ok || got != c.Meaning {
			t.Errorf("%s.%s: file metadata %s%s = %q, want %q", tbl.Name, c.Name, MetaColumnMeaning, c.Name, got, c.Meaning)
		}
	}
	for key, want := range map[string]string{
		schema.MetaCatalogVersion: strconv.Itoa(schema.Version),
		schema.MetaTable:          tbl.Name,
		MetaSnapshotID:            m.ID,
		MetaSnapshotAt:            m.StartedAt.Format(time.RFC3339Nano),
		MetaWatermark:             fixtureWatermark.Format(time.RFC3339Nano),
		MetaSchema:                m.Schema,
	} {
		if got, ok := kvValue(f.kv, key); !ok || got != want {
			t.Errorf("%s: file metadata %s = %q, want %q", tbl.Name, key, got, want)
		}
	}
	if _, ok := kvValue(f.kv, "ARROW:schema"); !ok {
		t.Errorf("%s: no stored Arrow schema", tbl.Name)
	}
	for i, c := range f.codecs {
		if c != codec {
			t.Errorf("%s column %d compressed with %s, want %s", tbl.Name, i, c, codec)
		}
	}
}

func TestManifestContent(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 40)
	dest, dir := newLocal(t)
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 987654321, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{FileRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	m, err := w.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "20261122T101500Z" || m.Format != ManifestFormat || m.Schema != name || m.CatalogVersion != schema.Version ||
		m.Compression != CompressionZstd || m.Watermark == nil || !m.Watermark.Equal(fixtureWatermark) ||
		!m.StartedAt.Equal(clock.t.Truncate(time.Microsecond)) || m.FinishedAt.Before(m.StartedAt) {
		t.Errorf("unexpected manifest header: %+v", m)
	}
	got, err := Latest(context.Background(), dest, name)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || len(got.Tables) != len(m.Tables) || !got.Watermark.Equal(*m.Watermark) {
		t.Errorf("Latest returned %+v, want %+v", got, m)
	}
	for _, tm := range m.Tables {
		var want int64
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{name, tm.Name}.Sanitize()).Scan(&want); err != nil {
			t.Fatal(err)
		}
		var rows, size int64
		for i, f := range tm.Files {
			if f.Path != name+"/"+partName(tm.Name, m.ID, i) {
				t.Errorf("%s file %d is %s", tm.Name, i, f.Path)
			}
			st, err := os.Stat(filepath.Join(dir, f.Path))
			if err != nil || st.Size() != f.Bytes {
				t.Errorf("%s: stat %v, manifest says %d bytes", f.Path, err, f.Bytes)
			}
			rows += f.Rows
			size += f.Bytes
		}
		if tm.Rows != want || rows != want || size != tm.Bytes {
			t.Errorf("%s: manifest rows %d (files %d, bytes %d of %d), PostgreSQL has %d", tm.Name, tm.Rows, rows, size, tm.Bytes, want)
		}
	}
	if users, _ := m.Table("users"); len(users.Files) != 3 {
		t.Errorf("40 users in files of 16 rows gave %d files", len(users.Files))
	}
}

func TestWriteEmptyWarehouse(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	dest, _ := newLocal(t)
	w, err := New(pool, name, dest, testLogger(t), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := w.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Watermark != nil {
		t.Errorf("watermark %v without a sync_state row", m.Watermark)
	}
	for _, tm := range m.Tables {
		got, files := snapshotRows(t, dest, tm)
		if len(tm.Files) != 1 || tm.Rows != 0 || len(got) != 0 || files[0].schema.NumFields() != len(tableByName(t, tm.Name).Columns) {
			t.Errorf("%s: %d files, %d rows, %d read", tm.Name, len(tm.Files), tm.Rows, len(got))
		}
	}
}

func TestWriteBusy(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	dest, _ := newLocal(t)
	w, err := New(pool, name, dest, testLogger(t), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, w.sql.lock, "usersync:snapshot:"+dest.String()+"/"+name); err != nil { // the deployment's folder
		t.Fatal(err)
	}
	if _, err := w.Write(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("Write while another holds the lock: %v, want ErrBusy", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx); err != nil {
		t.Fatalf("Write after the lock was released: %v", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	dest, _ := newLocal(t)
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Compression: "lz4"}, "compression must be"},
		{Options{CompressionLevel: 23}, "compression level"},
		{Options{Keep: -1}, "keep must be at least 1"},
		{Options{BatchRows: -5}, "batch rows"},
		{Options{FileRows: -1}, "file rows"},
		{Options{PageBytes: 10}, "page bytes"},
		{Options{Tables: []string{"oauth_tokens"}}, `"oauth_tokens" is not a snapshot table`},
	} {
		if _, err := New(pool, name, dest, nil, nil, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
	if _, err := New(pool, "Bad-Name", dest, nil, nil, Options{}); err == nil {
		t.Error("New accepted an invalid schema name")
	}
}
