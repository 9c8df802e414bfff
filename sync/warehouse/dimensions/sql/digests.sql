-- The digest of each dimension list last applied, kept in sync_state under
-- the dimension's table name (see Load.SetDigest). Rendered once per
-- dimensions.Store.

-- name: readDigests
-- $1 the dimension tables.
SELECT stream, digest FROM {{schema}}.sync_state WHERE stream = ANY($1::text[]) AND digest IS NOT NULL

-- name: writeDigest
-- $1 the table, $2 the digest of the list just applied (NULL: unknown).
INSERT INTO {{schema}}.sync_state (stream, digest) VALUES ($1, $2)
ON CONFLICT (stream) DO UPDATE SET digest = EXCLUDED.digest, updated_at = now()
WHERE sync_state.digest IS DISTINCT FROM EXCLUDED.digest
