-- The team statements of a teams list that keep membership history (see
-- history.go), rendered once per Store. {{teams_rows}} is the table the
-- teams list is staged in, page by page (see dimension_sql.go).

-- name: returningTeams
-- Teams marked deleted that the staged list brings back: their members are
-- listed before the list is applied, and applied with it.
SELECT DISTINCT r.id FROM {{teams_rows}} r JOIN {{schema}}.teams t ON t.id = r.id
WHERE t.deleted_at IS NOT NULL ORDER BY r.id

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
