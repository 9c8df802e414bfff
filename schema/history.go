package schema

// historyTables are the history of team membership, teams, roles and
// profiles (migration 0006): for each, a table of the ended intervals or
// superseded versions, and a view that unites them with the current rows.
func historyTables() []Table {
	validFrom := Column{Name: "valid_from", Type: "timestamptz", Meaning: "when usersync first saw this version (warehouse time)"}
	validTo := Column{Name: "valid_to", Type: "timestamptz", Meaning: "when a newer version replaced it or the id was marked deleted"}
	membership := []Column{
		userIDColumn,
		{Name: "team_id", Type: "bigint", Meaning: "id of the team (teams.id)"},
		{Name: "valid_from", Type: "timestamptz", Meaning: "when usersync first saw the user in the team (warehouse time)"},
		{Name: "valid_to", Type: "timestamptz", Meaning: "when usersync saw the membership end: the user left the team, or the user or the team was marked deleted"},
	}
	history := append(append([]Column{}, membership...), Column{Name: "ended_by", Type: "text",
		Meaning: "why the membership ended: removed (the user left the team), user_deleted or team_deleted (marked deleted; it opens again if the id comes back)"})
	view := nullable(append([]Column{}, membership...))
	view[3].Meaning = "when the membership ended (see user_team_history.ended_by); null while it lasts"
	out := []Table{
		{Name: "user_team_history", Analysts: true, Columns: history,
			Meaning: "Ended team memberships: one row per interval during which a user was in a team, with valid_to set; today's memberships are in user_teams. Query user_team_versions, which unites both."},
		{Name: "user_team_versions", View: true, Analysts: true, Snapshot: true, Columns: view,
			Meaning: "History of team membership: one row per interval during which a user was a member of a team, from valid_from until valid_to (null while it lasts). Unites user_team_history and user_teams."},
	}
	for _, r := range Dimensions() {
		key := Column{Name: r.Type + "_id", Type: "bigint", Meaning: "id of the " + r.Type + " (" + r.Table + ".id)"}
		cols := append(append([]Column{key}, resourceColumns(r, false)...), rawColumn, validFrom, validTo)
		viewCols := make([]Column, len(cols))
		copy(viewCols, cols)
		viewCols[len(cols)-1].Meaning = "when a newer version replaced it or the " + r.Type + " was marked deleted; null for the current version of a live " + r.Type
		out = append(out,
			Table{Name: r.Type + "_history", Analysts: true, Columns: cols,
				Meaning: "The superseded versions of " + r.Table + " (valid_to set); the current version of each is its " + r.Table + " row. Query " + r.Type + "_versions, which unites both."},
			Table{Name: r.Type + "_versions", View: true, Analysts: true, Snapshot: true, Columns: nullable(viewCols),
				Meaning: "History of " + r.Table + ": one row per distinct version of a " + r.Type + "'s content, valid from valid_from until valid_to (null for the current version of a live " + r.Type + "; the deletion time for a deleted one). Unites " + r.Type + "_history and " + r.Table + "."})
	}
	return out
}
