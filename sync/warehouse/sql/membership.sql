-- The team statements of a teams list that keep membership history (see
-- history.go), rendered once per Store. {{teams_stage}} is the teams'
-- staging table.

-- name: restoredTeams
-- Teams marked deleted that the list brings back (the upsert clears their
-- deleted_at): their members are listed again.
SELECT t.id FROM {{schema}}.teams t JOIN {{teams_stage}} st ON st.id = t.id
WHERE t.deleted_at IS NOT NULL ORDER BY t.id

-- name: closeTeamMembers
-- The memberships of the teams this transaction marked deleted (deleted_at
-- is the transaction's now()) end now.
WITH gone AS (
	DELETE FROM {{schema}}.user_teams ut USING {{schema}}.teams t
	WHERE t.id = ut.team_id AND t.deleted_at = now()
	RETURNING ut.user_id, ut.team_id, ut.valid_from
)
INSERT INTO {{schema}}.user_team_history (user_id, team_id, valid_from, valid_to, ended_by)
SELECT user_id, team_id, valid_from, now(), 'team_deleted' FROM gone
