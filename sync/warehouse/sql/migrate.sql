-- The migration runner's statements (migrate.go), rendered from the schema
-- name alone: migrate works before a Store exists. The versioned migrations
-- themselves are schema/migrations/*.sql. What is filled when a statement
-- runs, being an identifier or the literal of a utility statement, which
-- cannot be parameters: {{role}}, the analysts' reader role (quoted);
-- {{table}}, a table of the catalog (quoted); {{kind}}, {{target}} and
-- {{meaning}}, a COMMENT ON derived from the catalog.

-- name: createSchema
CREATE SCHEMA IF NOT EXISTS {{schema}}

-- name: createMigrations
CREATE TABLE IF NOT EXISTS {{schema}}.schema_migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now())

-- name: recordMigration
INSERT INTO {{schema}}.schema_migrations (version, name) VALUES ($1, $2)

-- name: appliedVersions
SELECT version FROM {{schema}}.schema_migrations

-- name: migrationsExist
-- $1: the schema_migrations table's name; a missing schema is not an error.
SELECT to_regclass($1) IS NOT NULL

-- name: latestApplied
SELECT coalesce(max(version), 0) FROM {{schema}}.schema_migrations

-- name: commentBookkeeping
-- The comments of what is not in the catalog; the catalog's follow in the
-- same batch (comment).
COMMENT ON SCHEMA {{schema}} IS 'usersync warehouse: users, teams, roles and profiles mirrored from the sales-engagement API.';
COMMENT ON TABLE {{schema}}.schema_migrations IS 'Versions of usersync''s migrations applied to this schema.';
COMMENT ON COLUMN {{schema}}.schema_migrations.version IS 'migration version';
COMMENT ON COLUMN {{schema}}.schema_migrations.name IS 'migration file name';
COMMENT ON COLUMN {{schema}}.schema_migrations.applied_at IS 'when it was applied'

-- name: comment
-- One per table, view and column of the catalog (schema.Tables()), with its
-- meaning as a quoted literal, all sent in one batch.
COMMENT ON {{kind}} {{target}} IS {{meaning}}

-- name: readerIsMigrator
-- Whether the current user is the reader role $1 or a member of it,
-- directly or through other roles. pg_has_role would say yes to every role
-- for a superuser, so the memberships are walked instead.
WITH RECURSIVE mine(oid) AS (
	SELECT oid FROM pg_roles WHERE rolname = current_user
	UNION SELECT m.roleid FROM pg_auth_members m JOIN mine ON m.member = mine.oid)
SELECT EXISTS (SELECT 1 FROM mine JOIN pg_roles r USING (oid) WHERE r.rolname = $1)

-- name: readerRole
-- Whether the reader role $1 exists, and whether the current user may create it.
SELECT
	EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
	(SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user)

-- name: createReader
-- Another migrator (of another schema) may create it at the same moment.
DO $$ BEGIN CREATE ROLE {{role}} NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$

-- name: grantUsage
-- The grants are sent in one batch: this, then grantSelect or revokeAll for
-- every table of the catalog, then revokeAll for schema_migrations.
GRANT USAGE ON SCHEMA {{schema}} TO {{role}}

-- name: grantSelect
GRANT SELECT ON {{schema}}.{{table}} TO {{role}}

-- name: revokeAll
REVOKE ALL ON {{schema}}.{{table}} FROM {{role}}

-- name: readerMissing
-- Of the tables $3 of schema $2, those the role $1 may not read (all of
-- them when it may not use the schema): what usersync check reports.
SELECT coalesce(array_agg(t ORDER BY t), '{}') FROM unnest($3::text[]) t
WHERE NOT has_table_privilege($1, format('%I.%I', $2::text, t), 'SELECT')
   OR NOT has_schema_privilege($1, $2, 'USAGE')
