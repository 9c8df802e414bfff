package dimensions

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// LiveTeamIDs returns the ids of the teams not marked deleted.
func (s *Store) LiveTeamIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, s.teams.liveTeamIDs)
	if err != nil {
		return nil, fmt.Errorf("listing live teams: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("listing live teams: %w", err)
	}
	return ids, nil
}

// ReplaceTeamMembers makes user_teams hold exactly the members of team that
// are in users, in one transaction, touching only the rows that differ, and
// returns the rows added and removed and the members not in users. Those
// (users created after the run's users pass) are left out, so user_teams
// only ever holds rows of users in users and a user new to the warehouse has
// none (the users load relies on it): the next sync writes the user, sees
// its teams sent without data, and lists membership again.
func (s *Store) ReplaceTeamMembers(ctx context.Context, team int64, members []int64) (added, removed, absent int64, err error) {
	if members == nil {
		members = []int64{}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		row := tx.QueryRow(ctx, s.teams.replaceTeamMembers, team, members)
		return row.Scan(&added, &removed, &absent)
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("replacing members of team %d: %w", team, err)
	}
	return added, removed, absent, nil
}
