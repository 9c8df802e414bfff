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

-- name: jobCounts
-- $1 account (NULL: every account): the jobs of each account by kind,
-- state and queue (a sync's lane). The fleet's own jobs (its ticks, the
-- remakes of the union views) belong to no account and are not counted.
SELECT coalesce(nullif(args->>'account', ''), 'default'), kind, state::text, queue, count(*) FROM {{river}}.river_job
WHERE kind LIKE 'usersync\_%' AND kind NOT IN ('usersync_due', 'usersync_views')
  AND ($1::text IS NULL OR coalesce(nullif(args->>'account', ''), 'default') = $1)
GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4

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

-- name: createAccountIndex
-- usersync's index on River's job table (River's migrations leave indexes
-- they do not own alone; usersync migrate makes it again if one dropped
-- it): the jobs of an account and kind by creation, the expression every
-- per-account statement above filters on. Without it the fleet's tick read
-- every job River keeps (8 days of them) to find each account's last.
CREATE INDEX IF NOT EXISTS usersync_river_job_account_kind_created
ON {{river}}.river_job ((coalesce(nullif(args->>'account', ''), 'default')), kind, created_at)

-- name: lastCreatedOf
-- $1 accounts, $2 kinds: the last job of each account and kind, one index
-- probe each (NULLs: none kept): when it was created, whether it is a sync
-- of the slow lane, whether it is still active, and, completed, how long its
-- last attempt ran (which routes the account's next sync, lanes.go); and the
-- database's now.
SELECT a.account, k.kind, j.created_at, coalesce((j.args->>'slow')::boolean, false),
	coalesce(j.state NOT IN ('completed', 'cancelled', 'discarded'), false),
	CASE WHEN j.state = 'completed' THEN greatest(extract(epoch FROM j.finalized_at - j.attempted_at), 0)::float8 END,
	now()
FROM unnest($1::text[]) AS a(account) CROSS JOIN unnest($2::text[]) AS k(kind)
LEFT JOIN LATERAL (SELECT j.created_at, j.args, j.state, j.finalized_at, j.attempted_at FROM {{river}}.river_job j
	 WHERE coalesce(nullif(j.args->>'account', ''), 'default') = a.account AND j.kind = k.kind
	 ORDER BY j.created_at DESC LIMIT 1) j ON true

-- name: firstSynced
-- $1 accounts, $2 and $3 the sync and backfill kinds: when each account's
-- first sync or backfill kept completed (NULL: none did), which a new
-- account's first reconcile waits for; a job completed because it went on
-- waiting for the lock as another (lock_wait) ran nothing.
SELECT a.account, least(
	(SELECT j.finalized_at FROM {{river}}.river_job j
	 WHERE coalesce(nullif(j.args->>'account', ''), 'default') = a.account AND j.kind = $2 AND j.state = 'completed'
	   AND NOT coalesce((j.metadata->'output'->>'lock_wait')::boolean, false)
	 ORDER BY j.created_at LIMIT 1),
	(SELECT j.finalized_at FROM {{river}}.river_job j
	 WHERE coalesce(nullif(j.args->>'account', ''), 'default') = a.account AND j.kind = $3 AND j.state = 'completed'
	   AND NOT coalesce((j.metadata->'output'->>'lock_wait')::boolean, false)
	 ORDER BY j.created_at LIMIT 1))
FROM unnest($1::text[]) AS a(account)
