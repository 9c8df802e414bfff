-- The OAuth credential of a deployment, one row per token URL and client id
-- (token_key, a digest of both: never the secret). Rendered once per Store
-- (see tokens.go).

-- name: load
SELECT refresh_token FROM {{schema}}.oauth_tokens WHERE token_key = $1

-- name: save
INSERT INTO {{schema}}.oauth_tokens (token_key, refresh_token) VALUES ($1, $2)
ON CONFLICT (token_key) DO UPDATE SET refresh_token = EXCLUDED.refresh_token, updated_at = now()

-- name: saveGrant
-- updated_at moves only when the refresh token changes: it tells when the
-- refresh token was last rotated. A scope the endpoint did not send ($5 null)
-- keeps the stored one; a grant that works ends the last refresh failure.
INSERT INTO {{schema}}.oauth_tokens AS o (token_key, refresh_token, access_token, expires_at, scope)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (token_key) DO UPDATE SET refresh_token = EXCLUDED.refresh_token, access_token = EXCLUDED.access_token,
	expires_at = EXCLUDED.expires_at, scope = coalesce(EXCLUDED.scope, o.scope),
	refresh_failed_at = NULL, refresh_error_code = NULL, refresh_error = NULL,
	updated_at = CASE WHEN o.refresh_token = EXCLUDED.refresh_token THEN o.updated_at ELSE now() END

-- name: saveFailure
-- Only a stored credential has a refresh to fail; a configured token that
-- was never stored has no row, and gets none.
UPDATE {{schema}}.oauth_tokens SET refresh_failed_at = now(), refresh_error_code = $2, refresh_error = $3
WHERE token_key = $1

-- name: info
SELECT expires_at, updated_at, scope, refresh_failed_at, coalesce(refresh_error_code, ''), coalesce(refresh_error, '')
FROM {{schema}}.oauth_tokens WHERE token_key = $1

-- name: all
-- Every stored credential of the schema, for Rekey; locked until it commits.
SELECT token_key, refresh_token, coalesce(access_token, '') FROM {{schema}}.oauth_tokens ORDER BY token_key FOR UPDATE

-- name: reseal
-- The same tokens sealed again: updated_at (the last rotation) stays.
UPDATE {{schema}}.oauth_tokens SET refresh_token = $2, access_token = $3 WHERE token_key = $1
