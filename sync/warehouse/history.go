package warehouse

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
)

// historySQL holds the history statements of one dimension (see
// sql/history.sql and sql/membership.sql), rendered once per Store. Like
// users, a dimension keeps its current version in its row
// (version_valid_from) and its superseded versions in <type>_history; the
// teams list also ends and restarts membership intervals (user_teams and
// user_team_history).
type historySQL struct {
	archive          string // the versions a list replaces, into the history
	restoredTeams    string // teams only: ids of deleted teams the list brings back
	closeTeamMembers string // teams only: memberships of teams just marked deleted, into user_team_history
}

func newHistorySQL(schemaName string, tables map[string]tableSQL) (map[string]historySQL, error) {
	q := schema.QuoteIdentifier(schemaName)
	out := map[string]historySQL{}
	for _, typ := range dimensionTypes() {
		t := tables[typ]
		cols := quoteAll(t.columns[1:])
		st, err := loadStatements("history", map[string]string{
			"table": t.table, "stage": t.stage, "history": q + "." + schema.QuoteIdentifier(typ+"_history"),
			"key": schema.QuoteIdentifier(typ + "_id"), "columns": strings.Join(cols, ", "),
			"t.columns": prefixAll("t.", cols), "st.columns": prefixAll("st.", cols),
		})
		if err != nil {
			return nil, err
		}
		var h historySQL
		if err := assignStatements("history", st, map[string]*string{"archive": &h.archive}); err != nil {
			return nil, err
		}
		if typ == "team" {
			st, err := loadStatements("membership", map[string]string{"schema": q, "teams_stage": t.stage})
			if err != nil {
				return nil, err
			}
			err = assignStatements("membership", st, map[string]*string{
				"restoredTeams": &h.restoredTeams, "closeTeamMembers": &h.closeTeamMembers})
			if err != nil {
				return nil, err
			}
		}
		out[typ] = h
	}
	return out, nil
}

// archive closes the versions the staged list replaces (see
// sql/history.sql) and, for teams, notes the deleted teams it brings back.
func (d *DimensionLoad) archive(ctx context.Context, tx pgx.Tx) error {
	h := d.s.history[d.typ]
	if h.restoredTeams != "" {
		rows, err := tx.Query(ctx, h.restoredTeams)
		if err != nil {
			return fmt.Errorf("reading restored teams: %w", err)
		}
		if d.restored, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return fmt.Errorf("reading restored teams: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, h.archive); err != nil {
		return fmt.Errorf("closing replaced versions: %w", err)
	}
	return nil
}

// closeMembers ends the memberships of the teams the list marked deleted.
func (d *DimensionLoad) closeMembers(ctx context.Context, tx pgx.Tx, deleted int64) error {
	h := d.s.history[d.typ]
	if deleted == 0 || h.closeTeamMembers == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, h.closeTeamMembers); err != nil {
		return fmt.Errorf("ending memberships of deleted teams: %w", err)
	}
	return nil
}

// Restored returns the ids of the teams marked deleted that the finished
// list brought back: their memberships ended with their deletion, and only
// listing their members again can say who is in them now.
func (d *DimensionLoad) Restored() []int64 { return d.restored }
