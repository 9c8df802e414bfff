-- The statements usersync runs on River's tables (besides River's own, run
-- by River): {{river}} is the quoted River schema. Rendered by
-- jobs/statements.go; testdata/statements.golden.sql holds them, rendered
-- for River schema usersync_river.

-- name: createSchema
CREATE SCHEMA IF NOT EXISTS {{river}}

-- name: jobTableExists
-- $1 the quoted River schema: whether River's tables exist yet (a worker
-- that never migrated them).
SELECT to_regclass($1 || '.river_job') IS NOT NULL

-- name: workerRunning
-- Every running River client takes part in the leader election, and a
-- leader renews its term every few seconds: a live term means a worker runs.
SELECT EXISTS (SELECT FROM {{river}}.river_leader WHERE expires_at > now())

-- name: lastCreated
-- $1 kind: when a job of the kind was last created, by the database's clock.
SELECT max(created_at), now() FROM {{river}}.river_job WHERE kind = $1

-- name: jobCounts
SELECT kind, state::text, count(*) FROM {{river}}.river_job
WHERE kind LIKE 'usersync\_%' GROUP BY 1, 2 ORDER BY 1, 2

-- name: oldestRunning
-- $1 kinds: how long the oldest running job of each kind has been in its
-- attempt, by the database's clock (which set attempted_at).
SELECT kind, greatest(extract(epoch FROM now() - min(attempted_at)), 0)::float8
FROM {{river}}.river_job
WHERE state = 'running' AND kind = ANY($1) AND attempted_at IS NOT NULL GROUP BY kind

-- name: oldestSnapshotJob
-- $1 the snapshot kind.
SELECT min(created_at) FROM {{river}}.river_job WHERE kind = $1

-- name: lastCurrentSnapshot
-- $1 the snapshot kind. A skip because no run had completed left no current
-- snapshot; one because nothing changed did.
SELECT finalized_at, coalesce((metadata->'output'->>'bytes')::bigint, 0) FROM {{river}}.river_job
WHERE kind = $1 AND state = 'completed' AND metadata ? 'output'
  AND NOT coalesce((metadata->'output'->>'not_ready')::boolean, false)
ORDER BY id DESC LIMIT 1

-- name: lastSnapshot
-- $1 the snapshot kind.
SELECT metadata->'output', finalized_at FROM {{river}}.river_job
WHERE kind = $1 AND state = 'completed' AND metadata ? 'output' ORDER BY id DESC LIMIT 1

-- name: releaseOrphans
-- $1-$3 the sync kinds, $4 seconds: running jobs attempted longer ago than
-- that, while no session holds the sync lock, are made available again.
UPDATE {{river}}.river_job
SET state = 'available', scheduled_at = now(),
    errors = errors || jsonb_build_object('at', now(), 'attempt', attempt,
        'error', 'the worker running this job stopped without finishing it (no session holds the sync lock); made available again to resume')
WHERE state = 'running' AND kind IN ($1, $2, $3) AND attempted_at < now() - make_interval(secs => $4)
