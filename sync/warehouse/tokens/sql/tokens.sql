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
-- refresh token was last rotated.
INSERT INTO {{schema}}.oauth_tokens AS o (token_key, refresh_token, access_token, expires_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (token_key) DO UPDATE SET refresh_token = EXCLUDED.refresh_token, access_token = EXCLUDED.access_token,
	expires_at = EXCLUDED.expires_at,
	updated_at = CASE WHEN o.refresh_token = EXCLUDED.refresh_token THEN o.updated_at ELSE now() END

-- name: info
SELECT expires_at, updated_at FROM {{schema}}.oauth_tokens WHERE token_key = $1
