-- The views that unite every account's analysts' tables (#41, point 3), in
-- their own schema ({{union}}, <USERSYNC_SCHEMA>_all), remade in one
-- transaction when the accounts change. Filled when they run, being
-- identifiers: {{union}}, the views' schema; {{view}} and {{body}}, a view
-- and its query (its members' SELECTs joined by UNION ALL); {{role}}, the
-- analysts' reader role; {{text}}, the schema's comment. The views run with the reader's rights
-- (security_invoker, PostgreSQL 15 and later), so nobody reads through them
-- what they could not read directly.

-- name: serverVersion
SELECT current_setting('server_version_num')::int

-- name: owner
-- The comment of schema $1, when it exists: usersync's says so.
SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = $1

-- name: columns
-- The columns each account's tables have, to stand in NULL for those a
-- table lacks; from the catalog, which answers at once where
-- information_schema.columns checks every column's privileges.
SELECT n.nspname, c.relname, a.attname FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped

-- name: drop
DROP SCHEMA IF EXISTS {{union}} CASCADE

-- name: create
CREATE SCHEMA {{union}}

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

-- name: view
CREATE VIEW {{union}}.{{view}} WITH (security_invoker = true) AS {{body}}

-- name: roleExists
SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)

-- name: grantUsage
GRANT USAGE ON SCHEMA {{union}} TO {{role}}

-- name: grantSelect
GRANT SELECT ON ALL TABLES IN SCHEMA {{union}} TO {{role}}
