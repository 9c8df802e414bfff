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
-- $1 kind, $2 account: when a job of the kind was last created for the
-- account (jobs that name none are the default account's), by the
-- database's clock.
SELECT max(created_at), now() FROM {{river}}.river_job
WHERE kind = $1 AND coalesce(nullif(args->>'account', ''), 'default') = $2

-- name: jobCounts
-- $1 account (NULL: every account): the jobs of each account by kind and
-- state. The fleet's ticks belong to no account and are not counted.
SELECT coalesce(nullif(args->>'account', ''), 'default'), kind, state::text, count(*) FROM {{river}}.river_job
WHERE kind LIKE 'usersync\_%' AND kind <> 'usersync_due'
  AND ($1::text IS NULL OR coalesce(nullif(args->>'account', ''), 'default') = $1)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3

-- name: oldestRunning
-- $1 kinds: how long the oldest running job of each account and kind has
-- been in its attempt, by the database's clock (which set attempted_at).
SELECT coalesce(nullif(args->>'account', ''), 'default'), kind,
       greatest(extract(epoch FROM now() - min(attempted_at)), 0)::float8
FROM {{river}}.river_job
WHERE state = 'running' AND kind = ANY($1) AND attempted_at IS NOT NULL GROUP BY 1, 2

-- name: oldestSnapshotJob
-- $1 the snapshot kind, $2 the account.
SELECT min(created_at) FROM {{river}}.river_job WHERE kind = $1 AND coalesce(nullif(args->>'account', ''), 'default') = $2

-- name: lastCurrentSnapshot
-- $1 the snapshot kind, $2 the account. A skip because no run had
-- completed left no current snapshot; one because nothing changed did.
SELECT finalized_at, coalesce((metadata->'output'->>'bytes')::bigint, 0) FROM {{river}}.river_job
WHERE kind = $1 AND coalesce(nullif(args->>'account', ''), 'default') = $2 AND state = 'completed' AND metadata ? 'output'
  AND NOT coalesce((metadata->'output'->>'not_ready')::boolean, false)
ORDER BY id DESC LIMIT 1

-- name: lastSnapshot
-- $1 the snapshot kind, $2 the account.
SELECT metadata->'output', finalized_at FROM {{river}}.river_job
WHERE kind = $1 AND coalesce(nullif(args->>'account', ''), 'default') = $2 AND state = 'completed' AND metadata ? 'output'
ORDER BY id DESC LIMIT 1

-- name: releaseOrphans
-- $1-$3 the sync kinds, $4 seconds, $5 the account: its running jobs
-- attempted longer ago than that, while no session holds its sync lock,
-- are made available again.
UPDATE {{river}}.river_job
SET state = 'available', scheduled_at = now(),
    errors = errors || jsonb_build_object('at', now(), 'attempt', attempt,
        'error', 'the worker running this job stopped without finishing it (no session holds the sync lock); made available again to resume')
WHERE state = 'running' AND kind IN ($1, $2, $3) AND attempted_at < now() - make_interval(secs => $4)
  AND coalesce(nullif(args->>'account', ''), 'default') = $5

-- name: pruneDue
-- $1 seconds: the fleet's finished ticks older than that are deleted (one
-- a tick would otherwise be kept for the retention of every other job).
DELETE FROM {{river}}.river_job
WHERE kind = 'usersync_due' AND finalized_at < now() - make_interval(secs => $1)

-- name: lastCreatedByAccount
-- $1 kinds: when a job of each account and kind was last created (jobs
-- that name no account are the default account's), and the database's now,
-- also on a last row of NULLs: the fleet's tick reads every account's at
-- once, and the clock even when no job is kept.
SELECT coalesce(nullif(args->>'account', ''), 'default'), kind, max(created_at), now()
FROM {{river}}.river_job WHERE kind = ANY($1) GROUP BY 1, 2
UNION ALL SELECT NULL, NULL, NULL, now()
