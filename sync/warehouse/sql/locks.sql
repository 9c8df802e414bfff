-- The advisory locks (lock.go: the sync lock of a schema; migrate.go: the
-- migration lock every migrator shares), each named by a text ($1) hashed
-- to the lock's bigint key. Session locks: held on one dedicated connection
-- and released on that connection.

-- name: tryLock
SELECT pg_try_advisory_lock(hashtextextended($1, 0))

-- name: unlock
SELECT pg_advisory_unlock(hashtextextended($1, 0))

-- name: lockWait
-- How long the longest-waiting statement of any usersync session in this
-- database has waited for a lock (a table another session holds), in
-- seconds; 0 when none waits. A role sees its own sessions' waits.
SELECT coalesce(max(extract(epoch FROM now() - query_start)), 0)::float8
FROM pg_stat_activity
WHERE datname = current_database() AND application_name = 'usersync' AND wait_event_type = 'Lock' AND state = 'active'
