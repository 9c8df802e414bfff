// Package snapshot writes Parquet snapshots of the warehouse: every catalog
// table with Snapshot set (users, user_versions, teams, roles, profiles,
// user_teams, user_relationships and the users_current view), read in one
// REPEATABLE READ, READ ONLY transaction so that all tables agree, to a local
// folder or an S3-compatible bucket.
//
// # Layout
//
//	<root>/<table>/<id>/part-00000.parquet   (part-00001, … past Options.FileRows rows)
//	<root>/_manifests/<id>.json
//
// The id is the UTC second the snapshot started, e.g. 20261122T101500Z, so
// the newest snapshot of a table is the lexically greatest folder. A second
// snapshot in the same second gets "-01" (then "-02" … "-99"), which sorts
// after the plain id and before the next second; Write fails with a
// ClockError rather than publish a snapshot that would sort before the newest
// complete one.
//
// Columns are named, ordered and typed as the catalog says (schema.ArrowType:
// timestamptz is timestamp[us, UTC], jsonb is its JSON text, bigint[] and
// text[] are lists), NULLs kept; each field's metadata carries the column's
// meaning (schema.MetaMeaning), and each file's key-value metadata the
// catalog version, the table, the snapshot's id and start, the watermark and
// the Arrow schema (ARROW:schema), so Arrow readers get the time zone back.
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
// destination, so two processes sharing the database never write to one
// destination at once (the second gets ErrBusy), and the cleanup can remove
// whatever no manifest lists.
//
// # Retention
//
// After publishing, Write keeps the newest Options.Keep complete snapshots
// (default 30): for each older one it removes the manifest first, so
// readers stop seeing it, then its files. The snapshot just written is never
// removed. Failures there are logged and retried by the next Write.
//
// # Memory and speed
//
// Rows are streamed: one goroutine decodes PostgreSQL's binary rows straight
// into Arrow builders (no per-value allocation) while the previous record is
// encoded, its columns spread over Options.Workers goroutines (pqarrow
// encodes them one after the other). Memory is bounded by two records
// (BatchRows rows or BatchBytes bytes), one buffered row group
// (RowGroupBytes of values, compressed, plus each column's open page of
// PageBytes) and the zstd encoders at work, not by the table's size.
//
// The defaults come from BenchmarkWrite (bench_test.go) on 2 vCPUs: with
// 1,000,000 synthetic users (2.6 kB of raw JSON each) a whole snapshot (6
// million rows in 8 tables) peaked at 230–290 MB of heap; the users table
// alone streams at the speed PostgreSQL reads it (BenchmarkRead), about
// 33,000 rows per CPU second of this process. Arrow v15 makes two choices
// matter more than they would elsewhere:
//
//   - data pages are version 2: with version 1 pages, v15's definition-level
//     buffer reallocates and copies itself at every run of levels, which was
//     80% of all bytes allocated (75 kB per users row; 23 kB with version 2);
//   - zstd runs at level 1: v15 builds a new zstd encoder for every page
//     (about 0.6 MB, plus an 8 MB window at level 1 or 16 MB at level 3), so
//     level 3 cost 27% more CPU for files 7% smaller, and pages of 256 kB
//     trade that churn against the memory each open page holds.
//
// Parquet dictionary encoding is chosen per column from the first record:
// on where at most half of the values are distinct (enums, time zones,
// foreign keys), off elsewhere (emails, JSON, hashes), which gave smaller
// files and less CPU than all-on (Arrow's default) or all-off.
//
// The Go runtime may hold up to twice the live heap before collecting; a
// process that must stay under a hard limit should set GOMEMLIMIT.
package snapshot
