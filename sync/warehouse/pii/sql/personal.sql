-- The statements of the personal-data policy: recording the policy rows are
-- written under, usersync forget, the purge of long-deleted users and
-- usersync pii apply. {{schema}} is the quoted warehouse schema; the column
-- lists come from the catalog and the policy, rendered once per policy (see
-- newPersonalSQL). testdata/personal.golden.sql holds them rendered for a
-- policy hashing email and dropping phoneNumber.

-- name: policyInUse
-- The policy's id when it was noted within the hour and since the last pii
-- apply that finished: noting it again would change nothing policies reads.
SELECT policy_id FROM {{schema}}.pii_policies
WHERE fingerprint = $1 AND last_used_at >= greatest(now() - interval '1 hour',
	coalesce((SELECT max(finished_at) FROM {{schema}}.pii_apply), '-infinity'))

-- name: notePolicy
INSERT INTO {{schema}}.pii_policies (fingerprint, hashed, dropped, drop_unknown, key_id)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (fingerprint) DO UPDATE SET last_used_at = now()
RETURNING policy_id

-- name: columnComments
-- The comments the policy's columns hold now ($1 the schema's name), so
-- that only those that differ are written: each COMMENT is a catalog write
-- every connection's cache of the table must then reload.
SELECT c.relname, a.attname, coalesce(col_description(c.oid, a.attnum), '')
FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) AND c.relname IN ('users', 'user_version_history')
AND a.attnum > 0 AND NOT a.attisdropped

-- name: commentColumn
-- A column's comment, as the policy makes it: filled as it is sent, being
-- what COMMENT takes no parameter for ({{table}} and {{column}} quoted
-- names, {{comment}} a quoted literal).
COMMENT ON COLUMN {{schema}}.{{table}}.{{column}} IS {{comment}}

-- name: policies
-- The policies written under since the last pii apply that finished (all
-- of them when none has), newest first.
SELECT p.fingerprint, p.last_used_at FROM {{schema}}.pii_policies p
WHERE p.last_used_at >= coalesce((SELECT max(finished_at) FROM {{schema}}.pii_apply), '-infinity')
ORDER BY p.last_used_at DESC

-- name: applied
-- When the policy was last applied in full by pii apply, if ever.
SELECT finished_at FROM {{schema}}.pii_apply WHERE fingerprint = $1 AND finished_at IS NOT NULL

-- name: forgetCurrent
-- The user's current row: every personal column (the catalog's and the
-- policy's), the attributes kept in raw and the data connections cleared.
-- Returns how many personal columns held a value, and updated_at, which
-- the erased row's content hash then holds (forgetHash).
WITH old AS (SELECT id, num_nonnulls({{personal_columns}}) AS n FROM {{schema}}.users WHERE id = $1 FOR UPDATE)
UPDATE {{schema}}.users u SET {{clear_personal}}, raw = '{}'::jsonb, data_connections = NULL
FROM old WHERE u.id = old.id RETURNING old.n, coalesce(u.updated_at, 'epoch')

-- name: forgetHash
-- The cleared row's content hash: normalize.ErasedHash, no hash of what was
-- cleared.
UPDATE {{schema}}.users SET content_hash = $2 WHERE id = $1

-- name: forgetVersions
DELETE FROM {{schema}}.user_version_history WHERE user_id = $1

-- name: forgetQuarantine
DELETE FROM {{schema}}.quarantine WHERE resource_type = 'user' AND resource_id = $1::bigint::text

-- name: insertErasure
INSERT INTO {{schema}}.erasures (user_id, found, versions_deleted, quarantine_deleted, columns_cleared)
VALUES ($1, $2, $3, $4, $5)

-- name: purgeDeleted
-- Users marked deleted before $1, with their history, memberships (and
-- their history) and quarantine records; returns (users, versions) removed.
WITH gone AS (DELETE FROM {{schema}}.users WHERE deleted_at < $1 RETURNING id),
history AS (DELETE FROM {{schema}}.user_version_history WHERE user_id IN (SELECT id FROM gone) RETURNING 1),
teams AS (DELETE FROM {{schema}}.user_teams WHERE user_id IN (SELECT id FROM gone)),
team_history AS (DELETE FROM {{schema}}.user_team_history WHERE user_id IN (SELECT id FROM gone)),
quarantined AS (DELETE FROM {{schema}}.quarantine WHERE resource_type = 'user' AND resource_id IN (SELECT id::text FROM gone))
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM history)

-- name: applyProgress
SELECT phase, last_id, rewritten, kept_other_key, finished_at IS NOT NULL FROM {{schema}}.pii_apply WHERE fingerprint = $1

-- name: policyKeys
-- Every policy rows were written under: the attributes it hashed and the
-- id of its key, so pii apply knows per row which values hold hashes.
SELECT policy_id, hashed, coalesce(key_id, '') FROM {{schema}}.pii_policies

-- name: applyStart
INSERT INTO {{schema}}.pii_apply (fingerprint, phase) VALUES ($1, 'users')
ON CONFLICT (fingerprint) DO UPDATE SET phase = 'users', last_id = 0, rewritten = 0, kept_other_key = 0, started_at = now(), updated_at = now(), finished_at = NULL

-- name: applySave
UPDATE {{schema}}.pii_apply SET phase = $2, last_id = $3, rewritten = $4, kept_other_key = $5, updated_at = now(),
finished_at = CASE WHEN $2 = 'done' THEN now() END WHERE fingerprint = $1

-- name: usersBatch
-- A batch of users: the hashed columns' values, whether a dropped column
-- holds a value, whether raw holds attributes, the policy the row was
-- written under.
SELECT id, ARRAY[{{hash_columns}}]::text[], {{drop_any}}, raw <> '{}'::jsonb, pii_policy_id
FROM {{schema}}.users WHERE id > $1 ORDER BY id LIMIT $2

-- name: usersRewrite
-- $2 holds, per id, a JSON array of the hashed columns' new values; $4 is
-- the policy the rows are now written under.
UPDATE {{schema}}.users t SET {{hash_assign}}{{drop_assign}}raw = CASE WHEN $3 THEN '{}'::jsonb ELSE t.raw END, pii_policy_id = $4
FROM unnest($1::bigint[], $2::text[]) AS n(id, vals) WHERE t.id = n.id

-- name: versionsBatch
SELECT version_id, ARRAY[{{hash_columns}}]::text[], {{drop_any}}, raw <> '{}'::jsonb, pii_policy_id
FROM {{schema}}.user_version_history WHERE version_id > $1 ORDER BY version_id LIMIT $2

-- name: versionsRewrite
UPDATE {{schema}}.user_version_history t SET {{hash_assign}}{{drop_assign}}raw = CASE WHEN $3 THEN '{}'::jsonb ELSE t.raw END, pii_policy_id = $4
FROM unnest($1::bigint[], $2::text[]) AS n(id, vals) WHERE t.version_id = n.id

-- name: quarantineBatch
SELECT quarantine_id, raw::text, pii_policy_id FROM {{schema}}.quarantine
WHERE resource_type = 'user' AND quarantine_id > $1 ORDER BY quarantine_id LIMIT $2

-- name: quarantineRewrite
UPDATE {{schema}}.quarantine t SET raw = n.raw::jsonb, pii_policy_id = $3
FROM unnest($1::bigint[], $2::text[]) AS n(id, raw) WHERE t.quarantine_id = n.id
