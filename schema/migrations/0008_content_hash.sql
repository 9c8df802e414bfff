-- 0008_content_hash: users.content_hash and user_version_history.content_hash
-- become a hash of what the row stores, after the personal-data policy
-- (normalize.ContentHash), instead of SHA-256 of the attributes as the API
-- sent them, which let anyone reading the column test guesses of hashed,
-- dropped or erased values. SQL cannot compute the new hash: content_rehash
-- lists the tables usersync migrate then rewrites, a batch of keys per
-- transaction, resuming after the last key done when stopped.

CREATE TABLE {{schema}}.content_rehash (
    table_name text PRIMARY KEY,
    last_key bigint NOT NULL DEFAULT 0,
    finished_at timestamptz
);

INSERT INTO {{schema}}.content_rehash (table_name) VALUES ('users'), ('user_version_history');
