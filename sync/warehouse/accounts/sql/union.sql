-- The views that unite every account's analysts' tables, in their own schema
-- ({{union}}, <USERSYNC_SCHEMA>_all). Filled when they run, being
-- identifiers: {{union}}, the views' schema; {{view}} and {{body}}, a view
-- and its query (its members' SELECTs joined by UNION ALL); {{role}}, the
-- analysts' reader role; {{text}}, a comment. The views run with the
-- reader's rights (security_invoker, PostgreSQL 15 and later), so nobody
-- reads through them what they could not read directly. Analysts build on
-- them: they are replaced in place and dropped, when no longer needed,
-- without CASCADE, so that nothing of theirs is ever dropped with them.

-- name: serverVersion
SELECT current_setting('server_version_num')::int

-- name: owner
-- The comment of schema $1, when it exists: usersync's says so.
SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = $1

-- name: columns
-- The columns each account's tables have, to stand in NULL for those a
-- table lacks, and whether the reader role $2 may read each ('' for none:
-- every column is read). From the catalog, which answers at once where
-- information_schema.columns checks every column's privileges.
SELECT n.nspname, c.relname, a.attname,
	$2::text = '' OR has_schema_privilege($2::text, n.oid, 'USAGE') AND has_column_privilege($2::text, c.oid, a.attnum, 'SELECT')
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped

-- name: ours
-- The views of schema $1 that usersync made (their comment says so), with
-- their columns in order and each column's type: a view is replaced in
-- place only with its columns in that order, of those types.
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
WHERE n.nspname = $1 AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped
	AND starts_with(coalesce(obj_description(c.oid, 'pg_class'), ''), $2)
ORDER BY c.relname, a.attnum

-- name: dependents
-- What depends on view $1 besides the view itself: the views, materialized
-- views, functions and the like that a DROP would refuse to leave behind.
SELECT DISTINCT CASE WHEN d.classid = 'pg_rewrite'::regclass
	THEN (SELECT pg_describe_object('pg_class'::regclass, r.ev_class, 0) FROM pg_rewrite r WHERE r.oid = d.objid)
	ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END AS what
FROM pg_depend d
WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = $1::regclass AND d.deptype = 'n'
	AND NOT (d.classid = 'pg_rewrite'::regclass AND EXISTS (SELECT 1 FROM pg_rewrite r WHERE r.oid = d.objid AND r.ev_class = $1::regclass))
ORDER BY 1

-- name: createSchema
CREATE SCHEMA IF NOT EXISTS {{union}}

-- name: dropSchema
-- Only an empty schema: PostgreSQL refuses one that holds anything else.
DROP SCHEMA {{union}}

-- name: comment
-- {{text}} says whose views they are and carries the stamps of the members
-- and of the views' text they were made for (union.go).
COMMENT ON SCHEMA {{union}} IS {{text}}

-- name: lock
-- One refresh of a fleet's views at a time (migrate, accounts add, remove
-- and views, the fleet's tick on every replica): a transaction's lock on
-- the views' schema's name ($1). True once taken.
SELECT true FROM pg_advisory_xact_lock(hashtext('usersync:union:' || $1))

-- name: tryLock
-- The fleet's tick does not wait for another refresh: the next tick looks
-- again. True when taken.
SELECT pg_try_advisory_xact_lock(hashtext('usersync:union:' || $1))

-- name: member
-- One account's part of a view: {{account}}, its name as a literal;
-- {{columns}}, the view's columns as the account's table has them (NULL of
-- the column's type for one it lacks); {{schema}} and {{table}}, quoted.
SELECT {{account}}::text AS account, {{columns}} FROM {{schema}}.{{table}}

-- name: empty
-- A view no account's table is part of (none the reader role may read):
-- its columns, typed, and no row, so that what analysts built on it stays.
SELECT NULL::text AS account, {{columns}} WHERE false

-- name: view
-- Replaced in place: what depends on the view, and the grants on it, stay.
CREATE OR REPLACE VIEW {{union}}.{{view}} WITH (security_invoker = true) AS {{body}}

-- name: dropView
-- A view of usersync's that is no longer needed; never CASCADE.
DROP VIEW {{union}}.{{view}}

-- name: viewComment
COMMENT ON VIEW {{union}}.{{view}} IS {{text}}

-- name: roleExists
SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)

-- name: grantUsage
GRANT USAGE ON SCHEMA {{union}} TO {{role}}

-- name: grantSelect
-- Each of usersync's views, not every table of the schema: what analysts
-- put there is theirs to grant.
GRANT SELECT ON {{union}}.{{view}} TO {{role}}
