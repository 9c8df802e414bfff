-- The run bookkeeping, status and membership statements, rendered once per
-- Store (see runs.go, status.go, membership.go). {{run_columns}} is the
-- column list scanRun reads.

-- name: startRun
INSERT INTO {{schema}}.sync_runs (kind, range_from, range_until, job_id)
VALUES ($1, $2, $3, $4) RETURNING run_id

-- name: unfinishedRuns
SELECT {{run_columns}}
FROM {{schema}}.sync_runs WHERE kind = $1 AND status = 'running' ORDER BY run_id DESC

-- name: abandonRuns
-- An abandoned run is never resumed: its checkpoint goes.
UPDATE {{schema}}.sync_runs SET status = 'abandoned', finished_at = now(), next_url = NULL
WHERE run_id = ANY($1) AND status = 'running'

-- name: finishRun
-- One statement, so a run that wrote nothing ends with one commit: the run
-- succeeds with its summary and, when given ($6 to $16, else NULL: kept),
-- the checkpoint after its last page; the checkpoints of the earlier runs
-- of its kind go, which no run resumes once one has succeeded
-- (failedRunToResume); and when $4 is set and the run committed any
-- updatedAt, the watermark of stream $5 moves to it, never backwards (the
-- greatest updatedAt any run committed). It returns the watermark after it:
-- the statement's snapshot holds the one before, which moved reaches by
-- greatest (which ignores NULLs) when $4 is set.
-- When $18 and $19 are set (the digest of the run's one users page, which
-- changed nothing, and the watermark the run started from) and that
-- watermark is still $19, the run becomes the quiet path's anchor (stream
-- users_page, see quietRun); a NULL $19 matches no watermark.
WITH done AS (
	UPDATE {{schema}}.sync_runs SET status = 'succeeded', finished_at = now(), next_url = NULL,
	summary = $2, can_write = $3, max_updated_at = coalesce($6, max_updated_at),
	pages = coalesce($7, pages), fetched = coalesce($8, fetched), inserted = coalesce($9, inserted),
	updated = coalesce($10, updated), unchanged = coalesce($11, unchanged), quarantined = coalesce($12, quarantined),
	requests = greatest(requests, $13), rate_limited = greatest(rate_limited, $14), retries = greatest(retries, $15),
	unknown_attributes = coalesce($16, unknown_attributes), versions = coalesce($17, versions)
	WHERE run_id = $1 RETURNING kind, max_updated_at
), superseded AS (
	UPDATE {{schema}}.sync_runs o SET next_url = NULL FROM done
	WHERE o.kind = done.kind AND o.run_id < $1 AND o.next_url IS NOT NULL
), moved AS (
	INSERT INTO {{schema}}.sync_state (stream, watermark, run_id)
	SELECT $5, max_updated_at, $1 FROM done WHERE $4 AND max_updated_at IS NOT NULL
	ON CONFLICT (stream) DO UPDATE SET watermark = greatest(sync_state.watermark, EXCLUDED.watermark),
	run_id = CASE WHEN EXCLUDED.watermark > sync_state.watermark OR sync_state.watermark IS NULL THEN EXCLUDED.run_id ELSE sync_state.run_id END,
	updated_at = now()
), anchored AS (
	INSERT INTO {{schema}}.sync_state (stream, watermark, run_id, digest)
	SELECT 'users_page', $19::timestamptz, $1, $18::bytea FROM done
	WHERE greatest((SELECT watermark FROM {{schema}}.sync_state WHERE stream = $5), CASE WHEN $4 THEN max_updated_at END) = $19::timestamptz
	ON CONFLICT (stream) DO UPDATE SET watermark = EXCLUDED.watermark, run_id = EXCLUDED.run_id, digest = EXCLUDED.digest,
	updated_at = now()
)
SELECT greatest((SELECT watermark FROM {{schema}}.sync_state WHERE stream = $5),
	CASE WHEN $4 THEN max_updated_at END) FROM done

-- name: endRun
-- The summary of a run that did not succeed holds what status reads of it
-- (the rate limit it last saw, credentials the API refused), when any: status
-- shows a budget spent by a paused run. Its request counters are those of the
-- whole run, never lowered below what a checkpoint stored.
UPDATE {{schema}}.sync_runs SET status = $3, finished_at = now(), error = $2,
summary = CASE WHEN jsonb_typeof($4::jsonb) = 'object' THEN $4::jsonb ELSE summary END,
requests = greatest(requests, $5), rate_limited = greatest(rate_limited, $6), retries = greatest(retries, $7)
WHERE run_id = $1

-- name: failedRunToResume
SELECT {{run_columns}}
FROM {{schema}}.sync_runs r WHERE kind = $1 AND status IN ('failed', 'paused', 'interrupted') AND next_url IS NOT NULL
AND NOT EXISTS (SELECT 1 FROM {{schema}}.sync_runs n WHERE n.kind = r.kind AND n.run_id > r.run_id AND n.status IN ('succeeded', 'running'))
ORDER BY run_id DESC LIMIT 1

-- name: watermark
SELECT watermark FROM {{schema}}.sync_state WHERE stream = $1

-- name: reopenRun
UPDATE {{schema}}.sync_runs SET status = 'running', finished_at = NULL, error = NULL,
heartbeat_at = now(), job_id = coalesce($2, job_id) WHERE run_id = $1

-- name: runOfJob
SELECT {{run_columns}}
FROM {{schema}}.sync_runs WHERE job_id = $1 ORDER BY run_id DESC LIMIT 1

-- name: touchRun
UPDATE {{schema}}.sync_runs SET heartbeat_at = now(), requests = $2, rate_limited = $3, retries = $4
WHERE run_id = $1

-- name: status
SELECT
	(SELECT count(*) FROM {{schema}}.quarantine WHERE resolved_at IS NULL),
	(SELECT count(*) FROM {{schema}}.users WHERE deleted_at IS NULL),
	(SELECT unknown_attributes FROM {{schema}}.sync_runs WHERE status = 'succeeded' AND kind <> 'reconcile' ORDER BY run_id DESC LIMIT 1),
	(SELECT can_write FROM {{schema}}.sync_runs WHERE can_write IS NOT NULL ORDER BY run_id DESC LIMIT 1),
	coalesce((SELECT (summary->>'future_updated_at')::bigint FROM {{schema}}.sync_runs
		WHERE status = 'succeeded' AND kind <> 'reconcile' ORDER BY run_id DESC LIMIT 1), 0),
	(SELECT summary->'rate_limit' FROM {{schema}}.sync_runs WHERE summary ? 'rate_limit' ORDER BY run_id DESC LIMIT 1),
	(SELECT finished_at FROM {{schema}}.sync_runs WHERE status = 'succeeded' AND kind <> 'reconcile' ORDER BY run_id DESC LIMIT 1)

-- name: credentialsRefused
-- The newest run the API refused the credentials of, unless a run succeeded
-- after it (the credentials work again).
SELECT run_id, kind, coalesce(finished_at, started_at), coalesce((summary->'credentials_refused'->>'status')::int, 0),
	coalesce(summary->'credentials_refused'->>'code', ''), coalesce(error, '')
FROM {{schema}}.sync_runs r WHERE summary ? 'credentials_refused'
AND NOT EXISTS (SELECT 1 FROM {{schema}}.sync_runs n WHERE n.run_id > r.run_id AND n.status = 'succeeded')
ORDER BY run_id DESC LIMIT 1

-- name: lastRuns
SELECT {{run_columns}} FROM {{schema}}.sync_runs ORDER BY run_id DESC LIMIT $1

-- name: writeProbe
-- Whether the warehouse takes writes, without writing anything: PostgreSQL
-- refuses a read-only transaction (default_transaction_read_only, a standby)
-- and a role without UPDATE before it finds no row to update.
UPDATE {{schema}}.sync_runs SET heartbeat_at = heartbeat_at WHERE false

-- name: quietRun
-- An incremental run that found nothing changed, recorded in one statement
-- and only while the warehouse is as the quiet path's anchor left it: the
-- anchor (stream users_page, written by finishRun) holds the users page
-- @page read from the watermark @watermark, and its run is the last one
-- started (by any process); the sync lock free, the users watermark still
-- @watermark, each dimension list's digest still the one the run just
-- listed, no user in quarantine, and the policy noted within the hour and
-- since the last pii apply (policyInUse); Runs.Quiet adds the caller's guard
-- where the marker is. The anchor moves to the new run, so the next quiet
-- run of any process continues from it, and one that read the anchor before
-- this commits finds its run moved and records nothing. No row when any of
-- it fails: the run then takes its full path.
WITH ok AS (
	SELECT WHERE (SELECT watermark FROM {{schema}}.sync_state WHERE stream = 'users') = @watermark
	AND (SELECT count(*) FROM {{schema}}.sync_state s JOIN unnest(@streams::text[], @digests::bytea[]) d(stream, digest)
		ON s.stream = d.stream AND s.digest = d.digest) = cardinality(@streams::text[])
	AND NOT EXISTS (SELECT FROM {{schema}}.quarantine WHERE resource_type = 'user' AND resolved_at IS NULL)
	AND EXISTS (SELECT FROM {{schema}}.pii_policies WHERE policy_id = @policy_id AND fingerprint = @fingerprint
		AND last_used_at >= greatest(now() - interval '1 hour',
			coalesce((SELECT max(finished_at) FROM {{schema}}.pii_apply), '-infinity')))
	/* guard */
	AND pg_try_advisory_xact_lock(hashtextextended(@lock_key, 0))
), anchor AS (
	UPDATE {{schema}}.sync_state a SET run_id = nextval(pg_get_serial_sequence('{{schema}}.sync_runs', 'run_id')), updated_at = now()
	FROM ok
	WHERE a.stream = 'users_page' AND a.digest = @page::bytea AND a.watermark = @watermark
	AND a.run_id = (SELECT max(run_id) FROM {{schema}}.sync_runs)
	RETURNING a.run_id AS id
)
INSERT INTO {{schema}}.sync_runs (run_id, kind, status, started_at, finished_at, range_from, max_updated_at,
	pages, fetched, unchanged, requests, rate_limited, retries, unknown_attributes, can_write, job_id, summary)
OVERRIDING SYSTEM VALUE
SELECT n.id, 'incremental', 'succeeded', @started, now(), @from, @max_updated_at, @pages, @fetched, @unchanged,
	@requests, @rate_limited, @retries, @unknown, @can_write, @job_id, jsonb_set(@summary::jsonb, '{run_id}', to_jsonb(n.id))
FROM anchor n
RETURNING run_id
