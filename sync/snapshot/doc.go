// Package snapshot writes Parquet snapshots of the warehouse: every catalog
// table and view with Snapshot set (users, user_versions, teams, roles,
// profiles, user_teams, user_relationships, users_current and the histories
// user_team_versions, team_versions, role_versions and profile_versions;
// a view without a user_id is read in one query), all read
// through one database snapshot so that they agree, to a local folder or an
// S3-compatible bucket. Analysts read the files (DuckDB, Spark, dbt) without
// access to the database, and every file a manifest lists is complete.
//
//	dest, err := snapshot.ParseDestination(os.Getenv("USERSYNC_SNAPSHOT_DIR"), s3opts) // a folder or s3://bucket/prefix
//	w, err := snapshot.New(pool, "usersync", dest, logger, nil, snapshot.Options{})
//	m, err := w.WriteChanged(ctx) // ErrUnchanged and the newest manifest when nothing changed
//	var nr *snapshot.NotReadyError
//	if errors.As(err, &nr) {
//		// no completed sync to take a snapshot of: nothing was written
//	}
//	latest, err := snapshot.Latest(ctx, dest, "usersync")
//
// # Layout
//
//	<root>/<schema>/<table>/<id>/part-00000.parquet   (part-00001, … past Options.FileRows rows)
//	<root>/<schema>/<table>/current                   (the stable path: see below)
//	<root>/<schema>/_manifests/<id>.json
//
// <root> is the destination (USERSYNC_SNAPSHOT_DIR) and <schema> the
// warehouse schema read (USERSYNC_SCHEMA): the folder of one deployment.
// Deployments may share a root (staging and production, or two schemas of
// one database, in one bucket): Write creates, lists and removes only under
// its own folder, Latest, Manifests and ReadManifest take the schema and look
// only there, and a manifest records its schema (ReadManifest refuses one of
// another schema's), so no deployment sees, picks or removes another's
// snapshots. The schema is the namespace because it already names the
// deployment where analysts meet it (the tables, dbt's source) and is a
// valid folder and key name on every store; two deployments that share both
// a root and a schema name (on two databases) share a folder, and must not.
// Manifest paths are relative to the root and begin with the schema.
//
// Snapshots of the layout before deployment folders (<root>/_manifests/,
// <root>/<table>/) are left where they are: their manifests record their
// schema but nothing proves that another deployment did not share the
// folder, so no Write removes or adopts them; each Write warns while
// <root>/_manifests/ holds any (docs/operations.md says how to move or
// remove them).
//
// The id is the UTC second the snapshot started, e.g. 20261122T101500Z, so
// the newest snapshot of a table is the lexically greatest folder. A second
// snapshot in the same second gets "-01" (then "-02" … "-99"), which sorts
// after the plain id and before the next second. When the newest complete
// snapshot is of a later second by at most five minutes (another replica's
// clock a little ahead), a new one takes that second with the next suffix,
// so it still sorts last. A complete snapshot dated further ahead (written
// while the clock was wrong and then set back, or copied in) is set aside:
// each Write warns about it, naming it, and neither names the new snapshot
// after it, compares with it (WriteChanged), counts it for retention nor
// removes it; Latest skips it too. Once the clock passes it, it is an
// ordinary snapshot again. Failing instead would stop every snapshot until
// someone removed the folder by hand.
//
// # When a snapshot is written
//
// Only of a warehouse as a completed sync left it. In its own transaction,
// before reading a table, Write reads sync_runs: a run that
// walked every user (a full sync, or the first incremental one, which has no
// watermark to start from) must have succeeded, no run may be running, and
// the run that ended last must have succeeded; otherwise it returns a
// NotReadyError and writes nothing. A run commits the team, role and profile
// lists, then each users page, in transactions of their own: a snapshot taken
// in between or after a run that stopped part way would hold tables from different
// moments. Abandoned runs (whose work a later run took over) do not count.
// The rule is read through the snapshot's own snapshot, so the tables read
// are the ones it judged.
//
// Columns are named, ordered and typed as the catalog says (schema.ArrowType:
// timestamptz is timestamp[us, UTC], jsonb is its JSON text, bigint[] and
// text[] are lists), NULLs kept. jsonb columns carry Parquet's JSON logical
// type (pqarrow v15 does not derive it from Arrow's canonical JSON extension,
// which schema.ArrowSchema names in their metadata, so this package sets it):
// DuckDB reads them as JSON, Spark as strings, and Go's pqarrow v15 as
// binary holding the text. Each field's metadata carries the column's
// meaning (schema.MetaMeaning), and each file's key-value metadata the
// catalog version, the table, the snapshot's id and start, the watermark,
// each column's meaning again (MetaColumnMeaning, for readers that ignore
// the Arrow schema: DuckDB, Spark) and the Arrow schema (ARROW:schema), so
// Arrow readers get the time zone back.
//
// # Reading
//
// Write opens a REPEATABLE READ, READ ONLY transaction, whose snapshot is
// the snapshot's, and exports it (pg_export_snapshot); Options.Readers-1
// more transactions (default 1), on connections of the pool, import it (SET
// TRANSACTION SNAPSHOT) before their first query, so every reader sees
// exactly the rows the first one does, whatever is committed meanwhile. With
// two readers or more, a table is read in chunks of about one record batch
// (BatchBytes of its stored size, or BatchRows of its estimated rows), one
// query each, shared round-robin among the readers:
//
//   - tables by ranges of heap blocks, WHERE ctid >= '(a,0)' AND
//     ctid < '(b,0)': a TID range scan reads only its blocks, needs no index
//     and splits evenly whatever the keys (the first range is open below and
//     the last open above, so rows moved or added meanwhile change nothing);
//   - views by ranges of the user id they are keyed on (users_current.id,
//     user_versions.user_id, user_relationships.user_id) at bounds taken from
//     the users table's ids, a condition PostgreSQL pushes down to the
//     users and user_version_history index scans, after a chunk of NULL ids.
//
// Each reader decodes into its own Arrow builders and hands one finished
// batch at a time to Write's goroutine, which takes the chunks in order. So a
// file's rows are in chunk order: a table's in its heap order (as a
// sequential scan from the first block returns them, without the
// synchronized scans that can start one mid-table), a view's by ranges of
// user ids, and the files are byte for byte the same whatever the number of
// readers from two on. One reader reads each table or view in one query
// (heap order for tables, the plan's for views), because with a single
// connection chunks only left the server idle between one and the next.
// JIT compilation is off in the readers: compiling a view's plan took longer
// than running a chunk's query. Readers are capped at the pool's size less
// one; one the pool cannot lend within two seconds is skipped (with a
// warning) rather than hold the snapshot open waiting.
//
// # Publication and atomicity
//
// The manifest lists every file of every table with its rows and bytes, the
// users watermark, the catalog version and the start and finish times. It is
// written last: a snapshot without a manifest is incomplete, and readers
// (Latest, the status command, analysts' scripts) only look at files a
// manifest lists. On a local folder every file, the manifest included, is
// written under a temporary name in its final folder
// (".part-00000.parquet.tmp-<random>"), fsynced, closed, renamed into place,
// and the folder fsynced; on S3 each object is a streamed multipart upload
// that exists only once completed. So a crash, a cancelled context or a full
// disk never leaves a partial file under a name a reader looks at, and the
// previous snapshot stays the latest. A failed Write removes what it wrote;
// what a crashed one left (temporary files, unfinished uploads, folders
// without a manifest) is removed by the next successful Write.
//
// Write takes a transaction-scoped PostgreSQL advisory lock named after the
// deployment's folder, so two processes sharing the database never write to
// one folder at once (the second gets ErrBusy), and the cleanup can remove
// whatever no manifest lists.
//
// # Stable paths
//
// Each table's <table>/current always shows the newest complete snapshot,
// so a DuckDB view or a dbt-duckdb source can name
// <table>/current/*.parquet once. It is switched after the manifest is
// written. On a local folder it is a symbolic link
// to the id's folder (a relative target, next to it), replaced by renaming
// a new link over it: a reader resolves the old folder or the new one,
// never half of one (though a reader that opens a table's files one by one
// across a switch resolves the link again for each). S3 has neither links
// nor atomic renames of several objects, so current/ holds server-side copies of the files, the extra
// ones removed after: each object is replaced atomically, but a table of
// several files listed during the copies may show files of two snapshots
// (the files' usersync.snapshot_id tells); a single-file pointer would need
// every reader to resolve it, which dbt-duckdb's external_location cannot.
// The names are outside the layout ("current" is no id), so
// retention never counts or removes them; it keeps the snapshot a link
// still points to after a failed switch, removes links left by a crash
// (".current.tmp-…") and those of tables no longer written whose snapshot
// it removes. A Write that finds nothing changed switches what does not
// yet show the newest snapshot (after an upgrade, or a failed switch).
// Local.List reports such a link (named current, pointing at an id) as an
// Entry with its Target instead of refusing it like any other link.
//
// # Retention
//
// After publishing, Write keeps the newest Options.Keep complete snapshots
// (default 30): for each older one it removes the manifest first, so
// readers stop seeing it, then its files. The snapshot just written is never
// removed. Failures there are logged and retried by the next Write. Only the
// deployment's own folder is looked at.
//
// A symbolic link under a local root (other than a stable link) fails the
// listing (LinkError), so Write refuses before writing, naming the link. Following it could lead
// retention out of the root to delete whatever the link points at;
// removing it would leave the snapshots behind it, with their personal
// data, past their retention and out of sight; skipping it would do
// the same in silence. The root itself may be a link: NewLocal resolves it.
//
// # Memory and speed
//
// Rows are streamed: each reader decodes PostgreSQL's binary rows straight
// into its Arrow builders (no per-value allocation) while Write's goroutine
// encodes the previous record, its columns spread over Options.Workers
// goroutines (pqarrow encodes them one after the other). Memory is bounded
// by a record per reader and the one being encoded (BatchRows rows or
// BatchBytes bytes each), one buffered row group (RowGroupBytes of values,
// compressed, plus each column's open page of PageBytes) and the zstd
// encoders (one per worker, 2 MB of history each), not by the table's size.
//
// The defaults come from BenchmarkWrite and BenchmarkRead on
// 2 vCPUs that also run PostgreSQL (docs/benchmarks.md has the numbers):
// with 1,000,000 synthetic users (2.6 kB of raw JSON each) a whole snapshot
// (6 million rows in 8 tables and views) peaked at 210–240 MiB of heap with
// one or two readers. A users row costs PostgreSQL about 27 µs of CPU
// (mostly de-TOASTing the raw JSON and printing it as text) and this
// process about 27 µs (40% of it zstd): one connection delivers at most
// ~35,000 rows/s, two deliver what the cores allow. On a machine that also
// runs PostgreSQL the two together are the limit (2 cores / ~55 µs, about
// 36,000 rows/s); against a server of its own, this process alone is
// (projected: about 70,000 rows/s on 2 cores). Arrow v15 makes three choices matter
// more than they would elsewhere:
//
//   - data pages are version 2: with version 1 pages, v15's definition-level
//     buffer reallocates and copies itself at every run of levels, which was
//     80% of all bytes allocated (75 kB per users row; 23 kB with version 2);
//   - v15's zstd codec builds a new encoder for every page (about 0.6 MB of
//     tables per GOMAXPROCS, and a 16 MB history buffer for pages over
//     128 kB, allocated and zeroed each time), which was 70% of the bytes a
//     snapshot of users allocated and a quarter of its CPU: this package
//     assembles the files from Arrow's exported parts with a page writer
//     whose encoders are reused (15 kB allocated per users row instead of 40);
//   - zstd runs at level 1: level 3 cost 27% more CPU (measured with v15's
//     per-page encoders) for files 7% smaller.
//
// Parquet dictionary encoding is chosen per column from the first record:
// on where at most half of the values are distinct (enums, time zones,
// foreign keys), off elsewhere (emails, JSON, hashes), which gave smaller
// files and less CPU than all-on (Arrow's default) or all-off.
//
// The Go runtime may hold up to twice the live heap before collecting; a
// process that must stay under a hard limit should set GOMEMLIMIT.
//
// # Statements
//
// Every statement a snapshot runs is in sql/snapshot.sql, loaded with
// sync/warehouse/sqlfile once per Writer, and in
// testdata/statements.golden.sql, rendered for schema usersync with each
// table's SELECT, which TestStatementsGolden keeps true. What cannot be a
// parameter (a table's columns and name, a view's key column, the exported
// snapshot's id) is filled as the statement is sent; a chunk's bounds are
// parameters.
package snapshot
