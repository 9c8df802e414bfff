-- The advisory locks (lock.go: the sync lock of a schema; migrate.go: the
-- migration lock every migrator shares), each named by a text ($1) hashed
-- to the lock's bigint key. Session locks: held on one dedicated connection
-- and released on that connection.

-- name: lock
SELECT pg_advisory_lock(hashtextextended($1, 0))

-- name: tryLock
SELECT pg_try_advisory_lock(hashtextextended($1, 0))

-- name: unlock
SELECT pg_advisory_unlock(hashtextextended($1, 0))
