package warehouse

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// LiveTeamIDs returns the ids of the teams not marked deleted.
func (s *Store) LiveTeamIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM `+s.q+`.teams WHERE deleted_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("listing live teams: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("listing live teams: %w", err)
	}
	return ids, nil
}

// ReplaceTeamMembers makes user_teams hold exactly members for team, in one
// transaction, touching only the rows that differ.
func (s *Store) ReplaceTeamMembers(ctx context.Context, team int64, members []int64) (added, removed int64, err error) {
	if members == nil {
		members = []int64{}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM `+s.q+`.user_teams WHERE team_id = $1 AND NOT (user_id = ANY($2::bigint[]))`, team, members)
		if err != nil {
			return err
		}
		removed = tag.RowsAffected()
		tag, err = tx.Exec(ctx, `INSERT INTO `+s.q+`.user_teams (user_id, team_id) SELECT u, $1 FROM unnest($2::bigint[]) AS u ON CONFLICT DO NOTHING`, team, members)
		added = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("replacing members of team %d: %w", team, err)
	}
	return added, removed, nil
}
