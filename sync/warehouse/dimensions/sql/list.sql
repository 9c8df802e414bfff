-- The statements of a streamed dimension list (see Load), rendered once per
-- dimension table from the catalog: {{table}} and {{stage}} are the table
-- and its staging table, {{columns}} its COPY columns, {{rows}}, {{seen}} and
-- {{bad}} the load's three session temporary tables (see list_sql.go).

-- name: copyRows
-- The list's rows, then their order in the list and their updatedAt.
COPY {{rows}} ({{columns}}, usersync_seq, usersync_updated_at) FROM STDIN (FORMAT binary)

-- name: drop
DROP TABLE IF EXISTS {{rows}}, {{seen}}, {{bad}}

-- name: create
-- Drops leftovers, then creates the three staging tables.
DROP TABLE IF EXISTS {{rows}}, {{seen}}, {{bad}};
CREATE TEMP TABLE {{rows}} AS SELECT {{columns}}, 0::bigint AS usersync_seq, NULL::timestamptz AS usersync_updated_at FROM {{table}} WITH NO DATA;
CREATE TEMP TABLE {{seen}} (id bigint NOT NULL);
CREATE TEMP TABLE {{bad}} (seq bigint NOT NULL, resource_type text NOT NULL, resource_id text, field text, error text NOT NULL, raw jsonb NOT NULL)

-- name: stage
-- One row per id: the greatest updatedAt, the last one to arrive on ties (a
-- missing updatedAt sorts first), as the users load's dedupe keeps.
INSERT INTO {{stage}} ({{columns}}) SELECT DISTINCT ON (id) {{columns}} FROM {{rows}}
ORDER BY id, usersync_updated_at DESC NULLS LAST, usersync_seq DESC

-- name: delete
-- Live rows whose id was not seen.
UPDATE {{table}} AS t SET deleted_at = now()
WHERE t.deleted_at IS NULL AND NOT EXISTS (SELECT FROM {{seen}} AS seen WHERE seen.id = t.id)

-- name: resolve
-- $1 type: the quarantine records of the ids typed this time are resolved.
UPDATE {{schema}}.quarantine SET resolved_at = now()
WHERE resolved_at IS NULL AND resource_type = $1 AND resource_id IN (SELECT id::text FROM {{rows}})

-- name: insert
-- $1 run id: the quarantined resources of the list.
INSERT INTO {{schema}}.quarantine (run_id, resource_type, resource_id, field, error, raw)
SELECT $1::bigint, resource_type, resource_id, field, error, raw FROM {{bad}} ORDER BY seq
