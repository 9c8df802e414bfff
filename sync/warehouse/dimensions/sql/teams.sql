-- The statements of team membership outside a teams list: the teams a
-- membership pass walks, the replacement of one team's members, and
-- whether the last sync listed membership. Rendered once per dimensions.Store.

-- name: lastSyncListedMembership
SELECT coalesce((SELECT summary ? 'membership' FROM {{schema}}.sync_runs
	WHERE status = 'succeeded' AND kind IN ('incremental', 'full', 'backfill') ORDER BY run_id DESC LIMIT 1), false)

-- name: liveTeamIDs
SELECT id FROM {{schema}}.teams WHERE deleted_at IS NULL ORDER BY id

-- name: replaceTeamMembers
-- Users whose membership changes here lose their linkage hash, so the next
-- page that carries their teams diffs them again. Users marked deleted get
-- no membership (theirs ended with the deletion, and comes back with them);
-- memberships that end move to the history.
WITH known AS (
	SELECT u.id FROM {{schema}}.users u WHERE u.id = ANY($2::bigint[]) AND u.deleted_at IS NULL
), gone AS (
	DELETE FROM {{schema}}.user_teams WHERE team_id = $1 AND NOT (user_id = ANY($2::bigint[]))
	RETURNING user_id, team_id, valid_from
), ended AS (
	INSERT INTO {{schema}}.user_team_history (user_id, team_id, valid_from, valid_to, ended_by)
	SELECT user_id, team_id, valid_from, now(), 'removed' FROM gone
), added AS (
	INSERT INTO {{schema}}.user_teams (user_id, team_id) SELECT id, $1 FROM known
	ON CONFLICT DO NOTHING RETURNING user_id
), touched AS (
	UPDATE {{schema}}.users SET linkage_hash = NULL
	WHERE id IN (SELECT user_id FROM gone UNION SELECT user_id FROM added) AND linkage_hash IS NOT NULL
)
SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM gone),
	(SELECT count(DISTINCT m) FROM unnest($2::bigint[]) AS m) - (SELECT count(*) FROM known)
