-- The views that unite every account's analysts' tables (#41, point 3), in
-- their own schema ({{union}}, <USERSYNC_SCHEMA>_all), remade in one
-- transaction whenever the accounts change. Filled when they run, being
-- identifiers: {{union}}, the views' schema; {{view}} and {{body}}, a view
-- and its query; {{role}}, the analysts' reader role. The views run with the
-- reader's rights (security_invoker, PostgreSQL 15 and later), so nobody
-- reads through them what they could not read directly.

-- name: serverVersion
SELECT current_setting('server_version_num')::int

-- name: owner
-- The comment of schema $1, when it exists: usersync's says so.
SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = $1

-- name: columns
-- The columns each account's tables have, to stand in NULL for those a
-- table lacks.
SELECT table_schema, table_name, column_name FROM information_schema.columns WHERE table_schema = ANY($1)

-- name: drop
DROP SCHEMA IF EXISTS {{union}} CASCADE

-- name: create
CREATE SCHEMA {{union}}

-- name: comment
COMMENT ON SCHEMA {{union}} IS 'usersync union views: every account''s analysts'' tables, with an account column; remade by usersync migrate and usersync accounts add and remove.'

-- name: view
CREATE VIEW {{union}}.{{view}} WITH (security_invoker = true) AS {{body}}

-- name: roleExists
SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)

-- name: grantUsage
GRANT USAGE ON SCHEMA {{union}} TO {{role}}

-- name: grantSelect
GRANT SELECT ON ALL TABLES IN SCHEMA {{union}} TO {{role}}
