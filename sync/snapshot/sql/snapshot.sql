-- A snapshot's statements (writer.go, settled.go, read.go), rendered once
-- per Writer for its schema. Filled when a statement runs, being what
-- cannot be a parameter: {{snapshot_id}}, the exported snapshot's id as a
-- quoted literal (SET takes no parameters); {{columns}} and {{table}}, a
-- table's quoted columns (jsonb as its JSON text) and name, derived from
-- the catalog; {{key}}, the quoted user id column a view is read by in
-- chunks (read.go's viewKey).

-- name: lock
-- The transaction-scoped advisory lock of a destination ($1, its name):
-- the snapshot transaction's first statement, which also fixes its snapshot.
SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))

-- name: settled
-- Whether a run that walked every user (a full sync, or an incremental one
-- without a watermark to start from, or an unbounded backfill) has
-- succeeded, and the run that matters now: one still marked running (under
-- way, or its process died and the next run resumes it) or, when none is,
-- the one that ended last. Abandoned runs are left out: a later run took
-- their work over.
SELECT
	EXISTS (SELECT 1 FROM {{schema}}.sync_runs WHERE status = 'succeeded' AND kind <> 'reconcile'
		AND range_from IS NULL AND range_until IS NULL),
	coalesce(r.run_id, 0), coalesce(r.kind, ''), coalesce(r.status, '')
FROM (SELECT 1) one LEFT JOIN LATERAL (
	SELECT run_id, kind, status FROM {{schema}}.sync_runs WHERE status <> 'abandoned'
	ORDER BY status = 'running' DESC, finished_at DESC NULLS FIRST, run_id DESC LIMIT 1) r ON true

-- name: watermark
SELECT watermark FROM {{schema}}.sync_state WHERE stream = 'users'

-- name: changes
-- The mark of the warehouse's content (readChanges in writer.go): the runs
-- that changed something, the newest of them with its counters, and the
-- newest migration.
WITH changed AS (
	SELECT run_id, inserted + updated + quarantined + deleted + undeleted AS n FROM {{schema}}.sync_runs r
	WHERE inserted + updated + quarantined + deleted + undeleted > 0
	   OR coalesce((summary->'membership'->>'added')::bigint, 0) + coalesce((summary->'membership'->>'removed')::bigint, 0) > 0
	   OR EXISTS (SELECT 1 FROM jsonb_each(CASE WHEN jsonb_typeof(summary->'dimensions') = 'object' THEN summary->'dimensions' ELSE '{}' END) d
	              WHERE coalesce((d.value->>'Inserted')::bigint, 0) + coalesce((d.value->>'Updated')::bigint, 0)
	                  + coalesce((d.value->>'Deleted')::bigint, 0) + coalesce((d.value->>'Quarantined')::bigint, 0) > 0))
SELECT count(*), coalesce(max(run_id), 0), coalesce((SELECT n FROM changed ORDER BY run_id DESC LIMIT 1), 0),
	(SELECT coalesce(max(version), 0) FROM {{schema}}.schema_migrations)
FROM changed

-- name: jitOff
-- In every reader: each chunk is a query of its own, and compiling the
-- views' plans took longer than running them.
SET LOCAL jit = off

-- name: exportSnapshot
-- The snapshot of the snapshot's transaction, for the other readers to import.
SELECT pg_export_snapshot()

-- name: importSnapshot
-- A reader's first statement: it takes the exported snapshot.
SET TRANSACTION SNAPSHOT {{snapshot_id}}

-- name: relationStats
-- A relation's ($1, its quoted name) size in blocks, its stored size (heap
-- and TOAST) and its estimated rows (-1 or 0 when never analyzed).
SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint, pg_table_size(c.oid), c.reltuples::bigint
FROM pg_class c WHERE c.oid = $1::regclass

-- name: idRange
SELECT min(id), max(id) FROM {{schema}}.users

-- name: selectTable
-- Every row of a table, in one query.
SELECT {{columns}} FROM {{table}}

-- name: selectBlocks
-- The rows of a range of heap blocks: from the tid $1 (inclusive) to the
-- tid $2 (exclusive), a TID range scan. The first chunk starts at (0,0), the
-- last ends at (4294967295,0), past every block a table can have.
SELECT {{columns}} FROM {{table}} WHERE ctid >= $1::tid AND ctid < $2::tid

-- name: selectKeys
-- The rows of a view whose user id is from $1 to $2, both included (the
-- last chunk ends at the largest bigint).
SELECT {{columns}} FROM {{table}} WHERE {{key}} BETWEEN $1::bigint AND $2::bigint

-- name: selectKeyNull
-- The rows of a view without a user id: a chunk of its own, as BETWEEN
-- never takes them.
SELECT {{columns}} FROM {{table}} WHERE {{key}} IS NULL
