-- 0013_oauth_refresh_failure: the OAuth credential keeps its granted scope
-- and its last failed refresh.
--
-- A revoked grant showed as "stored token yes … expires in 1h59m" in auth
-- status while every refresh failed with invalid_grant; the refusal is kept
-- now, with when, until a refresh or a login succeeds. The scope is what the
-- token endpoint said the grant holds (RFC 6749 §5.1), for status; rows
-- stored before this migration have none until their next refresh.

ALTER TABLE {{schema}}.oauth_tokens
    ADD COLUMN scope text,
    ADD COLUMN refresh_failed_at timestamptz,
    ADD COLUMN refresh_error_code text,
    ADD COLUMN refresh_error text;
