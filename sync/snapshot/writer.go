package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
)

// File key-value metadata written by snapshots, besides schema.MetaTable and
// schema.MetaCatalogVersion.
const (
	MetaSnapshotID = "usersync.snapshot_id" // the snapshot's id, e.g. 20261122T101500Z
	MetaSnapshotAt = "usersync.snapshot_at" // when the snapshot's transaction started (RFC 3339, UTC)
	MetaWatermark  = "usersync.watermark"   // the users watermark (RFC 3339, UTC); absent if none yet
	MetaSchema     = "usersync.schema"      // the warehouse schema that was read
)

// Writer writes Parquet snapshots of a warehouse schema to a Destination.
type Writer struct {
	pool   *pgxpool.Pool
	schema string
	dest   Destination
	log    *slog.Logger
	now    func() time.Time
	opts   Options
	tables []schema.Table
	mem    memory.Allocator
	// Tests only: called, when set, once the snapshot is exported (before
	// the other readers import it), and as a reader starts on a chunk.
	snapshotExported func()
	chunkStarted     func(table string, reader, chunk int)
}

// New returns a Writer of the warehouse in schemaName. log may be nil
// (nothing is logged) and now may be nil (time.Now).
func New(pool *pgxpool.Pool, schemaName string, dest Destination, log *slog.Logger, now func() time.Time, opts Options) (*Writer, error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return nil, fmt.Errorf("schema name: %w", err)
	}
	if pool == nil || dest == nil {
		return nil, errors.New("snapshot.New needs a pool and a destination")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	tables, err := snapshotTables(opts.Tables)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Writer{pool: pool, schema: schemaName, dest: dest, log: log, now: now, opts: opts, tables: tables,
		mem: memory.NewGoAllocator()}, nil
}

// Options returns the writer's options with the defaults filled in.
func (w *Writer) Options() Options { return w.opts }

// snapshotRun is the state of one Write.
type snapshotRun struct {
	id        string
	schema    string
	started   time.Time
	watermark *time.Time
}

// arrowSchema is t's Arrow schema with the snapshot's metadata added.
func (s *snapshotRun) arrowSchema(t schema.Table) *arrow.Schema {
	base := schema.ArrowSchema(t)
	md := base.Metadata()
	keys := slices.Concat(md.Keys(), []string{MetaSnapshotID, MetaSnapshotAt, MetaSchema})
	values := slices.Concat(md.Values(), []string{s.id, s.started.Format(time.RFC3339Nano), s.schema})
	if s.watermark != nil {
		keys = append(keys, MetaWatermark)
		values = append(values, s.watermark.UTC().Format(time.RFC3339Nano))
	}
	all := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(base.Fields(), &all)
}

// Write takes a snapshot: every table read through one REPEATABLE READ,
// READ ONLY transaction's snapshot (by it and Options.Readers-1 transactions
// that import it), written as Parquet files, then the manifest, which
// publishes it. It then removes leftovers of failed snapshots and the
// snapshots beyond Options.Keep. On error, the files of this snapshot are
// removed and the previous snapshot stays the latest.
func (w *Writer) Write(ctx context.Context) (Manifest, error) {
	run := &snapshotRun{schema: w.schema, started: w.now().UTC().Truncate(time.Microsecond)}
	tx, err := w.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return Manifest{}, fmt.Errorf("starting the snapshot transaction: %w", err)
	}
	// Read only: rolling back is how it ends, and it releases the lock.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	if err := w.lock(ctx, tx); err != nil {
		return Manifest{}, err
	}
	if run.watermark, err = readWatermark(ctx, tx, w.schema); err != nil {
		return Manifest{}, err
	}
	existing, err := w.dest.List(ctx, "")
	if err != nil {
		return Manifest{}, fmt.Errorf("listing %s: %w", w.dest, err)
	}
	if run.id, err = nextID(run.started, existing); err != nil {
		return Manifest{}, err
	}
	rs, err := w.startReaders(ctx, tx)
	if err != nil {
		return Manifest{}, err
	}
	defer rs.close(ctx)
	log := w.log.With("snapshot", run.id)
	log.InfoContext(ctx, "snapshot started", "destination", w.dest.String(), "tables", len(w.tables), "readers", len(rs.txs))

	m, err := w.writeTables(ctx, rs, run, log)
	if err == nil {
		err = writeManifest(ctx, w.dest, m)
	}
	if err != nil {
		w.discard(ctx, run.id, log)
		return Manifest{}, fmt.Errorf("writing snapshot %s: %w", run.id, err)
	}
	log.InfoContext(ctx, "snapshot written", "rows", m.Rows(), "seconds", m.FinishedAt.Sub(m.StartedAt).Seconds())
	w.tidy(ctx, existing, m.ID, log)
	return m, nil
}

// writeTables writes every table and returns the manifest to publish.
func (w *Writer) writeTables(ctx context.Context, rs *readers, run *snapshotRun, log *slog.Logger) (Manifest, error) {
	m := Manifest{Format: ManifestFormat, ID: run.id, Schema: w.schema, CatalogVersion: schema.Version,
		Watermark: run.watermark, StartedAt: run.started, Compression: w.opts.Compression}
	for _, t := range w.tables {
		start := w.now()
		tm, err := w.writeTable(ctx, rs, run, t)
		if err != nil {
			return Manifest{}, fmt.Errorf("table %s: %w", t.Name, err)
		}
		m.Tables = append(m.Tables, tm)
		log.DebugContext(ctx, "table written", "table", t.Name, "rows", tm.Rows, "bytes", tm.Bytes,
			"files", len(tm.Files), "seconds", w.now().Sub(start).Seconds())
	}
	m.FinishedAt = w.now().UTC().Truncate(time.Microsecond)
	return m, nil
}

// sqlLock takes the transaction-scoped advisory lock of a destination.
const sqlLock = `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`

// lock makes concurrent Writes to one destination fail fast with ErrBusy:
// the lock is held by the snapshot transaction until it ends, and taking it
// is the transaction's first statement, which also fixes its snapshot.
func (w *Writer) lock(ctx context.Context, tx pgx.Tx) error {
	var ok bool
	if err := tx.QueryRow(ctx, sqlLock, "usersync:snapshot:"+w.dest.String()).Scan(&ok); err != nil {
		return fmt.Errorf("taking the snapshot lock: %w", err)
	}
	if !ok {
		return ErrBusy
	}
	return nil
}

// readWatermark returns the users stream's committed watermark, nil if none.
func readWatermark(ctx context.Context, tx pgx.Tx, schemaName string) (*time.Time, error) {
	var wm *time.Time
	err := tx.QueryRow(ctx, `SELECT watermark FROM `+pgx.Identifier{schemaName, "sync_state"}.Sanitize()+
		` WHERE stream = 'users'`).Scan(&wm)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the watermark: %w", err)
	}
	if wm != nil {
		u := wm.UTC()
		wm = &u
	}
	return wm, nil
}

// discard removes what a failed Write stored under its id. It runs even
// when ctx is cancelled; what it cannot remove, the next Write will.
func (w *Writer) discard(ctx context.Context, id string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var names []string
	for _, t := range w.tables {
		names = append(names, t.Name+"/"+id+"/")
	}
	names = append(names, manifestDir+"/")
	removed := 0
	for _, prefix := range names {
		entries, err := w.dest.List(ctx, prefix)
		if err != nil {
			log.WarnContext(ctx, "listing a failed snapshot's files", "error", err)
			continue
		}
		for _, e := range entries {
			if got, _, ok := entryID(e.Name); !ok || got != id {
				continue
			}
			if err := w.dest.Remove(ctx, e); err != nil {
				log.WarnContext(ctx, "removing a failed snapshot's file", "file", e.Name, "error", err)
				continue
			}
			removed++
		}
	}
	log.InfoContext(ctx, "failed snapshot discarded", "files", removed)
}
