-- The statements of a reconcile, rendered once per Store (see reconcile.go
-- and reconcile_walk.go). {{fetch}} is the reconcile's temporary table
-- (pg_temp), rebuilt by every attempt from the scan; {{scan}} and {{walk}}
-- are the id walk (what it listed, where it stands), kept in the schema so
-- that an attempt cut short is resumed by the next. {{users}} is the users
-- table; {{hit_conditions}} and {{linkage_diff}} come from the catalog's
-- relationships (linkConditions, linkageDiff). The fetch reasons are the
-- Fetch* constants.

-- name: drop
DROP TABLE IF EXISTS {{fetch}}

-- name: create
-- {{link_columns}}: the user's linkage to teams, roles and profiles as
-- listed, a bigint[] per relationship, NULL when the API sent no data.
-- The walk's tables are UNLOGGED: a crash of PostgreSQL (or a failover)
-- empties them, and the next reconcile walks again from the start (readWalk
-- checks the rows against the count the walk recorded); a million ids cost
-- no WAL. startWalk makes {{scan}} again, with the catalog's columns.
DROP TABLE IF EXISTS {{fetch}};
CREATE TEMP TABLE {{fetch_table}} (id bigint PRIMARY KEY, reason text NOT NULL);
CREATE UNLOGGED TABLE IF NOT EXISTS {{scan}} (id bigint NOT NULL, updated_at timestamptz, updated_text text{{link_columns}});
CREATE UNLOGGED TABLE IF NOT EXISTS {{walk}} (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	run_id bigint NOT NULL,
	started_at timestamptz NOT NULL DEFAULT now(),
	origin text NOT NULL,
	layout text NOT NULL,
	next_url text,
	pages bigint NOT NULL DEFAULT 0,
	rows bigint NOT NULL DEFAULT 0,
	unreadable bigint NOT NULL DEFAULT 0,
	complete boolean NOT NULL DEFAULT false)

-- name: startWalk
DROP TABLE IF EXISTS {{scan}};
CREATE UNLOGGED TABLE {{scan}} (id bigint NOT NULL, updated_at timestamptz, updated_text text{{link_columns}});
COMMENT ON TABLE {{scan}} IS 'usersync bookkeeping: the user ids (with updatedAt and linkage) listed by the id walk of the current or interrupted reconcile; emptied when it ends';
COMMENT ON TABLE {{walk}} IS 'usersync bookkeeping: where the id walk of the current or interrupted reconcile stands, so that the next attempt resumes it';
DELETE FROM {{walk}}

-- name: beginWalk
INSERT INTO {{walk}} (run_id, origin, layout) VALUES ($1, $2, $3)

-- name: readWalk
-- The age is on the database's clock, as started_at.
SELECT run_id, extract(epoch FROM now() - started_at)::float8, origin, layout, coalesce(next_url, ''),
	pages, rows, unreadable, complete, (SELECT count(*) FROM {{scan}})
FROM {{walk}}

-- name: recordPage
-- One page of the walk, in the transaction that copied its ids: $1 is the
-- link to the next page, NULL after the last.
UPDATE {{walk}} SET next_url = $1::text, pages = pages + 1, rows = rows + $2, unreadable = unreadable + $3,
	complete = $1::text IS NULL

-- name: addRows
UPDATE {{walk}} SET rows = rows + $1

-- name: endWalk
DELETE FROM {{walk}};
TRUNCATE {{scan}}

-- name: index
-- Built once the scan is complete: COPY into an unindexed table is faster,
-- and the table is analyzed with its final contents.
CREATE INDEX IF NOT EXISTS reconcile_scan_id ON {{scan}} (id); ANALYZE {{scan}}

-- name: compare
SELECT (SELECT count(DISTINCT id) FROM {{scan}}),
	(SELECT count(*) FROM {{users}} WHERE deleted_at IS NULL),
	(SELECT count(*) FROM {{users}} u WHERE u.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM {{scan}} s WHERE s.id = u.id))

-- name: undelete
-- A user that comes back gets back the memberships its deletion ended
-- (closed at its deleted_at, which o still holds), but for teams marked
-- deleted meanwhile.
WITH back AS (
	UPDATE {{users}} u SET deleted_at = NULL FROM {{users}} o
	WHERE o.id = u.id AND u.deleted_at IS NOT NULL AND EXISTS (SELECT 1 FROM {{scan}} s WHERE s.id = u.id)
	RETURNING u.id, o.deleted_at AS was
), reopened AS (
	INSERT INTO {{schema}}.user_teams (user_id, team_id)
	SELECT h.user_id, h.team_id FROM back
	JOIN {{schema}}.user_team_history h ON h.user_id = back.id AND h.valid_to = back.was AND h.ended_by = 'user_deleted'
	WHERE NOT EXISTS (SELECT FROM {{schema}}.teams t WHERE t.id = h.team_id AND t.deleted_at IS NOT NULL)
	ON CONFLICT DO NOTHING
), counted AS (
	UPDATE {{schema}}.sync_runs SET undeleted = undeleted + (SELECT count(*) FROM back) WHERE run_id = $1
)
SELECT count(*) FROM back

-- name: queueChanged
-- A missing or stale id is left alone when the quarantine holds it,
-- unresolved, with the updatedAt the scan saw: fetching it again would only
-- add a second quarantine record.
WITH listed AS (
	SELECT DISTINCT ON (id) id, updated_at, updated_text FROM {{scan}} ORDER BY id, updated_at DESC NULLS LAST
), cand AS (
	SELECT l.id, l.updated_text, CASE WHEN u.id IS NULL THEN '{{missing}}' ELSE '{{stale}}' END AS reason
	FROM listed l LEFT JOIN {{users}} u ON u.id = l.id
	WHERE u.id IS NULL OR l.updated_at > u.updated_at OR (u.updated_at IS NULL AND l.updated_at IS NOT NULL)
), skipped AS (
	SELECT c.id FROM cand c WHERE c.updated_text IS NOT NULL AND EXISTS (
		SELECT 1 FROM {{schema}}.quarantine q WHERE q.resolved_at IS NULL AND q.resource_type = 'user'
		AND q.resource_id = c.id::text AND q.raw->'attributes'->>'updatedAt' = c.updated_text)
), ins AS (
	INSERT INTO {{fetch}} (id, reason) SELECT id, reason FROM cand WHERE id NOT IN (SELECT id FROM skipped)
	ON CONFLICT (id) DO NOTHING RETURNING reason
)
SELECT count(*) FILTER (WHERE reason = '{{missing}}'), count(*) FILTER (WHERE reason = '{{stale}}'),
	(SELECT count(*) FROM skipped) FROM ins

-- name: queueDeletedLinks
-- Users linked to a dimension the API no longer lists, in one scan of users:
-- $1, $2, ... are the deleted ids of each dimension type, in the order of
-- reconcileSQL.dims.
WITH hit AS (
	SELECT u.id FROM {{users}} u WHERE u.deleted_at IS NULL AND ({{hit_conditions}})
), ins AS (
	INSERT INTO {{fetch}} (id, reason) SELECT id, '{{relinked}}' FROM hit ON CONFLICT (id) DO NOTHING RETURNING 1
)
SELECT count(*) FROM ins

-- name: queueLinkage
-- A live user is relinked when the scan saw it linked to teams, roles or
-- profiles otherwise than its row holds: the API links and unlinks users
-- when one of those is deleted or comes back, without moving their
-- updatedAt. One whose unresolved quarantine record holds the updatedAt the
-- scan saw is left alone, as in queueChanged.
-- {{linkage_diff}} reads the user's memberships as m.team_ids.
WITH listed AS (
	SELECT DISTINCT ON (id) * FROM {{scan}} ORDER BY id, updated_at DESC NULLS LAST
), memberships AS (
	SELECT user_id, array_agg(team_id) AS team_ids FROM {{schema}}.user_teams GROUP BY user_id
), hit AS (
	SELECT s.id, s.updated_text FROM listed s JOIN {{users}} u ON u.id = s.id LEFT JOIN memberships m ON m.user_id = s.id
	WHERE u.deleted_at IS NULL AND ({{linkage_diff}})
), kept AS (
	SELECT h.id FROM hit h WHERE h.updated_text IS NULL OR NOT EXISTS (
		SELECT 1 FROM {{schema}}.quarantine q WHERE q.resolved_at IS NULL AND q.resource_type = 'user'
		AND q.resource_id = h.id::text AND q.raw->'attributes'->>'updatedAt' = h.updated_text)
), ins AS (
	INSERT INTO {{fetch}} (id, reason) SELECT id, '{{relinked}}' FROM kept ON CONFLICT (id) DO NOTHING RETURNING 1
)
SELECT count(*) FROM ins

-- name: queueGone
WITH ins AS (
	INSERT INTO {{fetch}} (id, reason)
	SELECT u.id, '{{gone}}' FROM {{users}} u
	WHERE u.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM {{scan}} s WHERE s.id = u.id)
	ON CONFLICT (id) DO NOTHING RETURNING 1
)
SELECT count(*) FROM ins

-- name: fetchBatch
SELECT id FROM {{fetch}} WHERE id > $1 ORDER BY id LIMIT $2

-- name: queued
SELECT reason, count(*) FROM {{fetch}} GROUP BY reason

-- name: markDeleted
-- A deleted user's memberships end at its deleted_at (undelete and
-- reopenTeams find them by it).
WITH gone AS (
	UPDATE {{users}} u SET deleted_at = now()
	WHERE u.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM {{scan}} s WHERE s.id = u.id) RETURNING u.id
), closed AS (
	DELETE FROM {{schema}}.user_teams ut WHERE ut.user_id IN (SELECT id FROM gone)
	RETURNING ut.user_id, ut.team_id, ut.valid_from
), ended AS (
	INSERT INTO {{schema}}.user_team_history (user_id, team_id, valid_from, valid_to, ended_by)
	SELECT user_id, team_id, valid_from, now(), 'user_deleted' FROM closed
), counted AS (
	UPDATE {{schema}}.sync_runs SET deleted = deleted + (SELECT count(*) FROM gone) WHERE run_id = $1
)
SELECT count(*) FROM gone

-- name: deletedDimensionIDs
{{deleted_dimension_ids}}
ORDER BY 1, 2

-- name: restoredDimensionIDs
-- Live teams, roles and profiles that came back from a deletion since the
-- last reconcile that succeeded finished: one of their versions began after
-- the one before it ended (a deletion ends a version at deleted_at, a change
-- as the next begins). A reconcile holds the sync lock, so a sync that
-- brought one back ran before it started or after it finished.
WITH since AS (
	SELECT coalesce(max(finished_at), '-infinity') AS t FROM {{schema}}.sync_runs
	WHERE kind = 'reconcile' AND status = 'succeeded'
), versions AS (
{{dimension_versions}}
)
SELECT DISTINCT v.type, v.id FROM versions v, since
WHERE v.live AND v.valid_from > v.prev_to AND v.valid_from > since.t
ORDER BY 1, 2
