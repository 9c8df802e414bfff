-- The statements of a users page besides its table's own (rendered from the
-- catalog: see tableSQL), and of the team_id index. {{schema}} is replaced
-- by the quoted warehouse schema when the Store is made, {{lock_timeout}} by
-- the page's lock timeout. testdata/statements.golden.sql holds every
-- statement as the Store runs it, for schema usersync.

-- name: beginPage
-- A page's transaction: pages written at once must never wait long for
-- each other's locks (see prepareUsers).
BEGIN; SET LOCAL lock_timeout = '{{lock_timeout}}'

-- name: loadState
-- What StartLoad reads, in one statement: whether users holds no user, and
-- whether the team_id index of user_teams is missing.
SELECT NOT EXISTS (SELECT FROM {{schema}}.users), to_regclass('{{schema}}.user_teams_team_id') IS NULL

-- name: archiveVersions
-- Before the upsert replaces a user's content, its current version (held in
-- the users row) is closed into the history.
INSERT INTO {{schema}}.user_version_history (version_id, user_id, content_hash, {{version_columns}}, valid_from, valid_to, run_id, pii_policy_id)
OVERRIDING SYSTEM VALUE
SELECT u.version_id, u.id, u.content_hash, {{u.version_columns}}, u.version_valid_from, now(), u.version_run_id, u.pii_policy_id
FROM {{schema}}.users u JOIN {{users_stage}} st ON st.id = u.id WHERE u.content_hash <> st.content_hash

-- name: copyTeams
COPY {{schema}}.user_teams ("user_id", "team_id") FROM STDIN (FORMAT binary)

-- name: deleteTeams
-- The diff deletes use NOT IN over a subquery, which PostgreSQL runs as a
-- hashed subplan; a correlated NOT EXISTS over unnest() was planned as a
-- nested loop and grew with the square of the page. A membership that ends
-- moves to the history in the same statement.
WITH gone AS (
	DELETE FROM {{schema}}.user_teams ut WHERE ut.user_id = ANY($1::bigint[])
	AND (ut.user_id, ut.team_id) NOT IN (SELECT u, t FROM unnest($2::bigint[], $3::bigint[]) AS n(u, t))
	RETURNING ut.user_id, ut.team_id, ut.valid_from
)
INSERT INTO {{schema}}.user_team_history (user_id, team_id, valid_from, valid_to, ended_by)
SELECT user_id, team_id, valid_from, now(), 'removed' FROM gone

-- name: insertTeams
INSERT INTO {{schema}}.user_teams (user_id, team_id)
SELECT u, t FROM unnest($1::bigint[], $2::bigint[]) AS n(u, t) ON CONFLICT DO NOTHING

-- name: reopenTeams
-- Users marked deleted that the page brings back, and whose teams it does
-- not diff, get back the memberships their deletion ended (closed at their
-- deleted_at), which their unchanged linkage still describes; memberships
-- of teams marked deleted meanwhile stay ended. Run before the upsert
-- clears deleted_at.
INSERT INTO {{schema}}.user_teams (user_id, team_id)
SELECT h.user_id, h.team_id FROM {{schema}}.users u
JOIN {{schema}}.user_team_history h ON h.user_id = u.id AND h.valid_to = u.deleted_at AND h.ended_by = 'user_deleted'
WHERE u.id = ANY($1::bigint[]) AND u.deleted_at IS NOT NULL
AND NOT EXISTS (SELECT FROM {{schema}}.teams t WHERE t.id = h.team_id AND t.deleted_at IS NOT NULL)
ON CONFLICT DO NOTHING

-- name: noneUnresolved
-- Whether no user has an unresolved quarantine record (the partial index
-- quarantine_unresolved answers it).
SELECT NOT EXISTS (SELECT FROM {{schema}}.quarantine WHERE resource_type = 'user' AND resolved_at IS NULL)

-- name: resolveQuarantine
UPDATE {{schema}}.quarantine SET resolved_at = now()
WHERE resolved_at IS NULL AND resource_type = $1 AND resource_id = ANY($2::text[])

-- name: insertQuarantine
-- $7 the personal-data policy a user's resource was redacted under.
INSERT INTO {{schema}}.quarantine (run_id, resource_type, resource_id, field, error, raw, pii_policy_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)

-- name: checkpoint
UPDATE {{schema}}.sync_runs SET next_url = $2, max_updated_at = $3, pages = $4, fetched = $5,
inserted = $6, updated = $7, unchanged = $8, quarantined = $9, requests = $10, rate_limited = $11, retries = $12,
unknown_attributes = $13, versions = $14, heartbeat_at = now() WHERE run_id = $1

-- name: lockTeams
LOCK TABLE {{schema}}.user_teams IN ACCESS EXCLUSIVE MODE

-- name: teamIndexDroppable
SELECT NOT EXISTS (SELECT FROM {{schema}}.user_teams) AND to_regclass('{{schema}}.user_teams_team_id') IS NOT NULL

-- name: dropTeamIndex
DROP INDEX {{schema}}.user_teams_team_id

-- name: teamIndexMissing
SELECT to_regclass('{{schema}}.user_teams_team_id') IS NULL

-- name: createTeamIndex
CREATE INDEX IF NOT EXISTS user_teams_team_id ON {{schema}}.user_teams (team_id)

-- name: analyzeDue
-- $1 users written by the run. Due when PostgreSQL's autovacuum would
-- analyze users too (by the server's settings), or it never was.
SELECT c.reltuples < 0 OR $1::float8 >= current_setting('autovacuum_analyze_threshold')::float8
    + current_setting('autovacuum_analyze_scale_factor')::float8 * c.reltuples
FROM pg_class c WHERE c.oid = '{{schema}}.users'::regclass

-- name: analyze
-- users: only the columns the views join and filter on, sampling 3,000 rows
-- (a column list leaves autovacuum's full ANALYZE due); the others in full.
SET LOCAL default_statistics_target = 10;
ANALYZE {{schema}}.users (id, role_id, profile_id, updated_at, deleted_at);
SET LOCAL default_statistics_target TO DEFAULT;
ANALYZE {{schema}}.user_teams, {{dimension_tables}},
{{schema}}.user_version_history (user_id, valid_from), {{schema}}.user_team_history, {{dimension_histories}}
