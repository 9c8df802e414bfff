package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
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
	// MetaColumnMeaning followed by a column's name holds the column's
	// meaning: readers that ignore the stored Arrow schema (DuckDB's
	// parquet_kv_metadata, Spark) find the descriptions only there.
	MetaColumnMeaning = "usersync.meaning."
)

// Writer writes Parquet snapshots of a warehouse schema to a Destination.
type Writer struct {
	pool   *pgxpool.Pool
	schema string
	dest   deployment // the folder of the schema's deployment under the root
	log    *slog.Logger
	now    func() time.Time
	opts   Options
	tables []schema.Table
	sql    statements // sql/snapshot.sql
	mem    memory.Allocator
	// unproven logs once that the folder is not proven the Owner's.
	unproven sync.Once
	ownerMu  sync.Mutex // guards opts.Owner.Database, filled at the first Write
	// Tests only: called, when set, once the snapshot is exported (before
	// the other readers import it), and as a reader starts on a chunk.
	snapshotExported func()
	chunkStarted     func(table string, reader, chunk int)
}

// New returns a Writer of the warehouse in schemaName to the snapshot root
// dest: it writes, lists and removes only under <root>/<schemaName>/ (see
// Layout in doc.go). log may be nil (nothing is logged) and now may be nil
// (time.Now).
func New(pool *pgxpool.Pool, schemaName string, dest Destination, log *slog.Logger, now func() time.Time, opts Options) (*Writer, error) {
	if pool == nil || dest == nil {
		return nil, errors.New("snapshot.New needs a pool and a destination")
	}
	d, err := inDeployment(dest, schemaName)
	if err != nil {
		return nil, err
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	tables, err := snapshotTables(opts.Tables)
	if err != nil {
		return nil, err
	}
	q, err := newStatements(schemaName)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Writer{pool: pool, schema: schemaName, dest: d, log: log, now: now, opts: opts, tables: tables,
		sql: q, mem: memory.NewGoAllocator()}, nil
}

// snapshotRun is the state of one Write.
type snapshotRun struct {
	id        string
	schema    string
	started   time.Time
	watermark *time.Time
	changes   string // readChanges
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

// Write takes a snapshot: every table read through one database snapshot,
// written as Parquet files, then the manifest that publishes it, then
// retention. On error its files are removed and the previous snapshot stays
// the latest.
func (w *Writer) Write(ctx context.Context) (Manifest, error) {
	return w.write(ctx, false)
}

// ErrUnchanged is returned by WriteChanged when nothing a snapshot holds
// changed since the newest complete one.
var ErrUnchanged = errors.New("nothing changed since the last complete snapshot")

// WriteChanged writes a snapshot unless the newest complete one holds the
// same content: then it returns that one's manifest and ErrUnchanged.
// Content is judged from the runs (readChanges), not by reading the tables.
func (w *Writer) WriteChanged(ctx context.Context) (Manifest, error) {
	return w.write(ctx, true)
}

func (w *Writer) write(ctx context.Context, skipUnchanged bool) (Manifest, error) {
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
	if err := checkSettled(ctx, tx, w.sql); err != nil {
		return Manifest{}, err
	}
	if run.watermark, err = readWatermark(ctx, tx, w.sql); err != nil {
		return Manifest{}, err
	}
	if run.changes, err = readChanges(ctx, tx, w.sql); err != nil {
		return Manifest{}, err
	}
	existing, err := w.dest.List(ctx, "")
	if err != nil {
		return Manifest{}, fmt.Errorf("listing %s: %w", w.dest, err)
	}
	w.warnOldLayout(ctx)
	own, err := w.claim(ctx, existing)
	if err != nil {
		return Manifest{}, err
	}
	future := futureIDs(existing, run.started)
	w.warnFuture(ctx, future, run.started)
	if skipUnchanged {
		if last, ok := w.unchanged(ctx, existing, future, run); ok {
			return last, ErrUnchanged
		}
	}
	if run.id, err = nextID(run.started, existing, future); err != nil {
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
	w.tidy(ctx, existing, future, w.setCurrent(ctx, m, existing, log), m.ID, own, log)
	return m, nil
}

// unchanged returns the newest complete snapshot when it holds what run
// would, pointing the stable paths at it where they do not show it yet.
func (w *Writer) unchanged(ctx context.Context, existing []Entry, future map[string]bool, run *snapshotRun) (Manifest, bool) {
	ids := currentIDs(existing, future)
	if len(ids) == 0 {
		return Manifest{}, false
	}
	last, err := readManifest(ctx, w.dest, ids[len(ids)-1])
	same := err == nil && last.Changes == run.changes && last.Schema == w.schema && last.CatalogVersion == schema.Version
	if same {
		w.refreshCurrent(ctx, last, existing)
	}
	return last, same
}

// writeTables writes every table and returns the manifest to publish.
func (w *Writer) writeTables(ctx context.Context, rs *readers, run *snapshotRun, log *slog.Logger) (Manifest, error) {
	owner, err := w.owner(ctx)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{Format: ManifestFormat, ID: run.id, Schema: w.schema, CatalogVersion: schema.Version,
		Watermark: run.watermark, StartedAt: run.started, Compression: w.opts.Compression, Changes: run.changes,
		Policy: w.opts.Policy, Fleet: owner.Fleet, Database: owner.Database, Account: owner.Account}
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

// lock makes concurrent Writes to one destination fail fast with ErrBusy:
// the lock is held by the snapshot transaction until it ends, and taking it
// is the transaction's first statement, which also fixes its snapshot.
func (w *Writer) lock(ctx context.Context, tx pgx.Tx) error {
	var ok bool
	if err := tx.QueryRow(ctx, w.sql.lock, "usersync:snapshot:"+w.dest.String()).Scan(&ok); err != nil {
		return fmt.Errorf("taking the snapshot lock: %w", err)
	}
	if !ok {
		return ErrBusy
	}
	return nil
}

// readWatermark returns the users stream's committed watermark, nil if none.
// readChanges marks the content of the warehouse as the snapshot reads it.
// Every change to what a snapshot holds is made by a run and counted in its
// row of sync_runs, in the transaction that makes it: users inserted,
// updated, quarantined, deleted or undeleted per page, and the teams, roles,
// profiles and memberships a run changed in its summary (written with its
// end). The mark is the number of runs that changed something, the newest
// of them with its counters, and the newest migration: equal marks, equal
// content. (A run still writing its dimensions is counted when it ends: a
// snapshot skipped meanwhile is written by the next one.)
func readChanges(ctx context.Context, tx pgx.Tx, q statements) (string, error) {
	var runs, newest, counted, migration int64
	err := tx.QueryRow(ctx, q.changes).Scan(&runs, &newest, &counted, &migration)
	if err != nil {
		return "", fmt.Errorf("reading the warehouse's changes: %w", err)
	}
	return fmt.Sprintf("m%d-r%d-n%d-%d", migration, runs, newest, counted), nil
}

func readWatermark(ctx context.Context, tx pgx.Tx, q statements) (*time.Time, error) {
	var wm *time.Time
	err := tx.QueryRow(ctx, q.watermark).Scan(&wm)
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
