-- The statements that compute users' content_hash again from what a row
-- stores (normalize.ContentHash): pii apply and forget after they rewrite
-- rows, and the upgrade from the hash of the attributes as sent (migration
-- 0008). {{content_columns}} are the columns the hash covers, JSON as text.

-- name: usersAfter
SELECT id, {{content_columns}}, content_hash FROM {{schema}}.users WHERE id > $1 ORDER BY id LIMIT $2

-- name: usersOf
SELECT id, {{content_columns}}, content_hash FROM {{schema}}.users WHERE id = ANY($1::bigint[])

-- name: usersSave
UPDATE {{schema}}.users t SET content_hash = n.hash
FROM unnest($1::bigint[], $2::bytea[]) AS n(id, hash) WHERE t.id = n.id

-- name: versionsAfter
SELECT version_id, {{content_columns}}, content_hash FROM {{schema}}.user_version_history
WHERE version_id > $1 ORDER BY version_id LIMIT $2

-- name: versionsOf
SELECT version_id, {{content_columns}}, content_hash FROM {{schema}}.user_version_history
WHERE version_id = ANY($1::bigint[])

-- name: versionsSave
UPDATE {{schema}}.user_version_history t SET content_hash = n.hash
FROM unnest($1::bigint[], $2::bytea[]) AS n(id, hash) WHERE t.version_id = n.id

-- name: pending
-- The tables whose rows still hold hashes of the attributes as sent, with
-- the last key done.
SELECT table_name, last_key FROM {{schema}}.content_rehash WHERE finished_at IS NULL ORDER BY table_name

-- name: saveProgress
UPDATE {{schema}}.content_rehash SET last_key = $2, finished_at = CASE WHEN $3 THEN now() END
WHERE table_name = $1
