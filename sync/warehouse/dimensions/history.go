package dimensions

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// historySQL holds the history statements of one dimension (see
// sql/history.sql and sql/membership.sql), rendered once per Store. Like
// users, a dimension keeps its current version in its row
// (version_valid_from) and its superseded versions in <type>_history; the
// teams list also ends and restarts membership intervals (user_teams and
// user_team_history).
type historySQL struct {
	archive          string // the versions a list replaces, into the history
	returningTeams   string // teams only: ids of deleted teams the staged list brings back
	closeTeamMembers string // teams only: memberships of teams just marked deleted, into user_team_history
}

func (s *Store) newHistorySQL(schemaName string) (map[string]historySQL, error) {
	tables := s.tables
	q := schema.QuoteIdentifier(schemaName)
	out := map[string]historySQL{}
	for _, typ := range schema.DimensionTypes() {
		t := tables[typ]
		cols := pgrow.QuoteAll(t.Columns[1:])
		st, err := sqlfile.Load(sqlFiles, "history", map[string]string{
			"table": t.Name, "stage": t.Stage, "history": q + "." + schema.QuoteIdentifier(typ+"_history"),
			"key": schema.QuoteIdentifier(typ + "_id"), "columns": strings.Join(cols, ", "),
			"t.columns": pgrow.PrefixAll("t.", cols), "st.columns": pgrow.PrefixAll("st.", cols),
		})
		if err != nil {
			return nil, err
		}
		var h historySQL
		if err := sqlfile.Assign("history", st, map[string]*string{"archive": &h.archive}); err != nil {
			return nil, err
		}
		if typ == "team" {
			st, err := sqlfile.Load(sqlFiles, "membership", map[string]string{"schema": q, "teams_rows": s.lists["team"].rows})
			if err != nil {
				return nil, err
			}
			err = sqlfile.Assign("membership", st, map[string]*string{
				"returningTeams": &h.returningTeams, "closeTeamMembers": &h.closeTeamMembers})
			if err != nil {
				return nil, err
			}
		}
		out[typ] = h
	}
	return out, nil
}

// archive closes the versions the staged list replaces (see
// sql/history.sql).
func (d *Load) archive(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, d.s.history[d.typ].archive); err != nil {
		return fmt.Errorf("closing replaced versions: %w", err)
	}
	return nil
}

// ReturningTeams returns the ids of the teams marked deleted that the staged
// list brings back (none for other dimensions). Their memberships ended
// with their deletion, and users may have joined or left them meanwhile:
// the caller lists their members and hands them to Members, so that Finish
// applies the return and the membership in one transaction.
func (d *Load) ReturningTeams(ctx context.Context) ([]int64, error) {
	h := d.s.history[d.typ]
	if h.returningTeams == "" || d.rows == 0 {
		return nil, nil
	}
	if d.done || d.conn == nil {
		return nil, fmt.Errorf("reading returning teams: the load has failed, finished or been closed")
	}
	rows, err := d.conn.Query(ctx, h.returningTeams)
	if err != nil {
		return nil, fmt.Errorf("reading returning teams: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading returning teams: %w", err)
	}
	return ids, nil
}

// Members sets the members of a returning team (see ReturningTeams), which
// Finish writes to user_teams as ReplaceTeamMembers does.
func (d *Load) Members(team int64, members []int64) {
	if d.members == nil {
		d.members = map[int64][]int64{}
	}
	if members == nil {
		members = []int64{}
	}
	d.members[team] = members
}

// replaceMembers writes the members of the returning teams.
func (d *Load) replaceMembers(ctx context.Context, tx pgx.Tx) error {
	for team, members := range d.members {
		var added, removed, absent int64
		if err := tx.QueryRow(ctx, d.s.teams.replaceTeamMembers, team, members).Scan(&added, &removed, &absent); err != nil {
			return fmt.Errorf("replacing members of team %d: %w", team, err)
		}
	}
	return nil
}

// closeMembers ends the memberships of the teams the list marked deleted.
func (d *Load) closeMembers(ctx context.Context, tx pgx.Tx, deleted int64) error {
	h := d.s.history[d.typ]
	if deleted == 0 || h.closeTeamMembers == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, h.closeTeamMembers); err != nil {
		return fmt.Errorf("ending memberships of deleted teams: %w", err)
	}
	return nil
}
