-- The statements of one resource table, rendered once per table from the
-- catalog (see table.go): {{table}} is the table, {{stage}} its per-session
-- staging table, {{columns}} its COPY columns in order, {{set}} and
-- {{changed}} the upsert's assignments and its test of a changed row,
-- {{fill_columns}} the stored values a row may leave unsent.

-- name: copyTable
COPY {{table}} ({{columns}}) FROM STDIN (FORMAT binary)

-- name: copyStage
COPY {{stage}} ({{columns}}) FROM STDIN (FORMAT binary)

-- name: createStage
CREATE TEMP TABLE IF NOT EXISTS {{stage}} (LIKE {{table}} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS

-- name: upsert
-- Returns (inserted, updated). A row is written only when it changed or
-- came back (deleted_at cleared).
WITH up AS (
	INSERT INTO {{table}} AS t ({{columns}}) SELECT {{columns}} FROM {{stage}}
	ON CONFLICT (id) DO UPDATE SET {{set}}, synced_at = now(), deleted_at = NULL
	WHERE {{changed}} OR t.deleted_at IS NOT NULL
	RETURNING (xmax = 0) AS inserted)
SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM up

-- name: current
-- Users only: what a page's write compares the page with, of a set of ids.
SELECT id, content_hash, linkage_hash, deleted_at IS NOT NULL, other_relationships::text, updated_at FROM {{table}} WHERE id = ANY($1::bigint[])

-- name: currentFill
-- (id, the stored value of each column a row may leave unsent) of a set of
-- ids; not used by a table with no such column.
SELECT {{fill_columns}} FROM {{table}} WHERE id = ANY($1::bigint[])

-- name: liveCount
SELECT count(*) FROM {{table}} WHERE deleted_at IS NULL
