package snapshot

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/usersync/usersync/schema"
)

// Compression is the Parquet codec of every column.
type Compression string

// The codecs Options.Compression accepts.
const (
	CompressionZstd   Compression = "zstd"
	CompressionSnappy Compression = "snappy"
	CompressionNone   Compression = "none"
)

// Defaults of Options, chosen with BenchmarkWrite (see doc.go): they keep
// the peak heap of a snapshot between 200 and 280 MB whatever the tables'
// sizes (measured from 100,000 to 1,000,000 users), at the lowest CPU cost
// per row among the settings tried.
const (
	DefaultBatchRows     = 16384
	DefaultBatchBytes    = 8 << 20
	DefaultRowGroupRows  = 1 << 20
	DefaultRowGroupBytes = 64 << 20
	DefaultFileRows      = 1_000_000
	DefaultPageBytes     = 256 << 10
	DefaultKeep          = 30
	DefaultZstdLevel     = 1
	DefaultReaders       = 2
)

// Options tunes a Writer. The zero value means every default.
type Options struct {
	// Owner names the writer, recorded in each manifest and checked against
	// the folder's marker: a folder marked as another's is not written, and
	// only snapshots proven the Owner's are removed (see Owner).
	Owner Owner
	// Database, when set, gives Owner.Database at the first Write that
	// needs it (the database may not answer when the writer is made).
	Database func(context.Context) (string, error)
	// Policy is the fingerprint of the personal-data policy in force,
	// recorded in the manifest (see Manifest.Policy).
	Policy string
	// Compression is the codec: zstd (default), snappy or none.
	Compression Compression
	// CompressionLevel is the zstd level (1 = fastest … 22); 0 means
	// DefaultZstdLevel. Ignored by the other codecs.
	CompressionLevel int
	// BatchRows is how many rows are decoded into one Arrow record before it
	// is encoded (default DefaultBatchRows).
	BatchRows int
	// BatchBytes ends a record early once its rows hold this many bytes of
	// values, so wide rows (the raw jsonb) do not inflate memory
	// (default DefaultBatchBytes).
	BatchBytes int
	// RowGroupRows is the most rows per Parquet row group
	// (default DefaultRowGroupRows).
	RowGroupRows int
	// RowGroupBytes ends a row group once its rows hold this many bytes of
	// values, so wide and narrow tables get row groups of similar weight; a row
	// group is buffered in memory until complete (default DefaultRowGroupBytes).
	RowGroupBytes int
	// FileRows is the most rows one file holds; a larger table is written as
	// part-00000.parquet, part-00001.parquet, … (default DefaultFileRows).
	FileRows int64
	// PageBytes is the Parquet data page size (default DefaultPageBytes).
	PageBytes int
	// Workers is the number of goroutines encoding the columns of a row
	// group in parallel (default GOMAXPROCS).
	Workers int
	// Readers is the number of PostgreSQL connections a table is read over in
	// parallel, all seeing the snapshot's rows (default DefaultReaders). From 2
	// on the files do not depend on it; 1 reads each table in one query.
	Readers int
	// Keep is how many complete snapshots retention keeps, the newest first
	// (default DefaultKeep). The newest complete snapshot is never removed.
	Keep int
	// KeepDaily also keeps, beyond the newest Keep, the newest complete
	// snapshot of each UTC day within this long of now (0: none), so that
	// history reaches back days whatever the number of snapshots a day.
	KeepDaily time.Duration
	// Tables restricts snapshots to these tables (default: every catalog
	// table with Snapshot set).
	Tables []string

	// dictionary overrides the per-column dictionary choice; benchmarks only.
	dictionary dictionaryMode
	// pageV1 writes version 1 data pages instead of version 2. Benchmarks
	// only: see newFileFormat.
	pageV1 bool
	// writeBatch is Parquet's write batch size (values encoded between two
	// checks of the page size); 0 means Arrow's default. Benchmarks only.
	writeBatch int
	// chunkBytes is the stored size of a table read in one query; 0 means
	// BatchBytes. Tests and benchmarks only.
	chunkBytes int
}

// dictionaryMode says which columns get Parquet dictionary encoding.
type dictionaryMode int

const (
	dictionarySampled dictionaryMode = iota // decided per column from the first record (default)
	dictionaryAll                           // every column (Arrow's default)
	dictionaryNone                          // no column
)

// withDefaults fills in the defaults and checks the values.
func (o Options) withDefaults() (Options, error) {
	if o.Compression == "" {
		o.Compression = CompressionZstd
	}
	switch o.Compression {
	case CompressionZstd, CompressionSnappy, CompressionNone:
	default:
		return o, fmt.Errorf("compression must be zstd, snappy or none, not %q", o.Compression)
	}
	if o.CompressionLevel == 0 {
		o.CompressionLevel = DefaultZstdLevel
	}
	if o.CompressionLevel < 1 || o.CompressionLevel > 22 {
		return o, fmt.Errorf("compression level must be between 1 and 22, not %d", o.CompressionLevel)
	}
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&o.BatchRows, DefaultBatchRows)
	fill(&o.BatchBytes, DefaultBatchBytes)
	fill(&o.RowGroupRows, DefaultRowGroupRows)
	fill(&o.RowGroupBytes, DefaultRowGroupBytes)
	fill(&o.PageBytes, DefaultPageBytes)
	fill(&o.Workers, runtime.GOMAXPROCS(0))
	fill(&o.Readers, DefaultReaders)
	fill(&o.Keep, DefaultKeep)
	if o.FileRows == 0 {
		o.FileRows = DefaultFileRows
	}
	for _, c := range []struct {
		name string
		v    int64
		min  int64
	}{
		{"batch rows", int64(o.BatchRows), 1},
		{"batch bytes", int64(o.BatchBytes), 1 << 10},
		{"row group rows", int64(o.RowGroupRows), 1},
		{"row group bytes", int64(o.RowGroupBytes), 1 << 10},
		{"file rows", o.FileRows, 1},
		{"page bytes", int64(o.PageBytes), 1 << 10},
		{"workers", int64(o.Workers), 1},
		{"readers", int64(o.Readers), 1},
		{"keep", int64(o.Keep), 1},
	} {
		if c.v < c.min {
			return o, fmt.Errorf("%s must be at least %d, not %d", c.name, c.min, c.v)
		}
	}
	return o, nil
}

// snapshotTables returns the catalog tables a snapshot includes, in catalog
// order, each with its snapshot's columns (no bookkeeping), or an error
// naming a requested table that is not snapshotted.
func snapshotTables(only []string) ([]schema.Table, error) {
	var out []schema.Table
	for _, t := range schema.Tables() {
		if t.Snapshot && (len(only) == 0 || slices.Contains(only, t.Name)) {
			t.Columns = t.SnapshotColumns()
			out = append(out, t)
		}
	}
	for _, name := range only {
		if !slices.ContainsFunc(out, func(t schema.Table) bool { return t.Name == name }) {
			return nil, fmt.Errorf("table %q is not a snapshot table", name)
		}
	}
	return out, nil
}
