-- The account registry: one row per registered account, in the
-- fleet's River schema ({{schema}}, <USERSYNC_SCHEMA>_river), which the
-- analysts' reader role is never granted. River's migrations leave tables
-- they do not own alone. settings maps a setting's variable to the account's
-- value, secrets included (plaintext behind the grants, as oauth_tokens
-- keeps the rotated refresh token); USERSYNC_SCHEMA is always there and no
-- two accounts share it.

-- name: createTable
CREATE TABLE IF NOT EXISTS {{schema}}.accounts (
	name       text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,39}$' AND name <> 'default'),
	settings   jsonb NOT NULL CHECK (jsonb_typeof(settings->'USERSYNC_SCHEMA') = 'string'),
	paused_at  timestamptz,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now())

-- name: createSchemaIndex
CREATE UNIQUE INDEX IF NOT EXISTS accounts_schema_key ON {{schema}}.accounts ((settings->>'USERSYNC_SCHEMA'))

-- name: comment
COMMENT ON TABLE {{schema}}.accounts IS 'usersync''s registered accounts (usersync accounts add): each one''s settings, secrets included; never granted to analysts.'

-- name: exists
-- $1: the accounts table's name; a missing schema is not an error.
SELECT to_regclass($1) IS NOT NULL

-- name: insert
INSERT INTO {{schema}}.accounts (name, settings) VALUES ($1, $2)

-- name: list
-- The stamp (md5 of the stored settings) tells a reader that cached what it
-- parsed whether the row changed, even by a hand edit that left updated_at.
SELECT name, settings, paused_at, created_at, updated_at, md5(settings::text) FROM {{schema}}.accounts ORDER BY name

-- name: get
SELECT name, settings, paused_at, created_at, updated_at, md5(settings::text) FROM {{schema}}.accounts WHERE name = $1

-- name: heads
-- Every account without its settings: what the worker reads at each of its
-- fleet's ticks, parsing the settings again only of a row whose stamp
-- changed.
SELECT name, settings->>'USERSYNC_SCHEMA', paused_at IS NOT NULL, md5(settings::text) FROM {{schema}}.accounts ORDER BY name

-- name: sinceChange
-- Seconds since the last account was added or changed (NULL: none is
-- registered), by the database's clock.
SELECT extract(epoch FROM now() - max(updated_at))::float8 FROM {{schema}}.accounts

-- name: head
-- One account without its settings: what the worker reads for each job.
SELECT name, settings->>'USERSYNC_SCHEMA', paused_at IS NOT NULL, md5(settings::text) FROM {{schema}}.accounts WHERE name = $1

-- name: guard
-- Whether the account is as a worker opened it: registered, not paused,
-- its settings' stamp the one it was opened with (head's). A condition of
-- the statement that records a no-op sync, so that it reads no head.
EXISTS (SELECT FROM {{schema}}.accounts WHERE name = @guard_account AND paused_at IS NULL
	AND md5(settings::text) = @guard_stamp)

-- name: updateSettings
-- $2 holds the settings to set, $3 those to remove; the schema is the
-- account's for good.
UPDATE {{schema}}.accounts SET settings = (settings - $3::text[]) || ($2::jsonb - 'USERSYNC_SCHEMA'), updated_at = now()
WHERE name = $1

-- name: pause
-- Pausing a paused account keeps when it was first paused.
UPDATE {{schema}}.accounts SET paused_at = coalesce(paused_at, now()), updated_at = now() WHERE name = $1

-- name: resume
UPDATE {{schema}}.accounts SET paused_at = NULL, updated_at = now() WHERE name = $1

-- name: remove
DELETE FROM {{schema}}.accounts WHERE name = $1

-- name: schemaUse
-- What holds schema $1 already: whether it exists, whether it holds
-- usersync's tables (migrate's schema_migrations, another deployment's when
-- no account claims it) and whether its job queue schema exists.
SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
	to_regclass(quote_ident($1) || '.schema_migrations') IS NOT NULL,
	EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1 || '_river')

-- name: dropSchema
-- An account's schema, which accounts add created ({{target}}, filled when
-- it runs), with everything in it.
DROP SCHEMA IF EXISTS {{target}} CASCADE
