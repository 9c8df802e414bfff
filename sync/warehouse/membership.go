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
		// Users whose membership changes here lose their linkage hash, so the
		// next page that carries their teams diffs them again.
		row := tx.QueryRow(ctx, `WITH known AS (
			SELECT u.id FROM `+s.q+`.users u WHERE u.id = ANY($2::bigint[])
		), gone AS (
			DELETE FROM `+s.q+`.user_teams WHERE team_id = $1 AND NOT (user_id = ANY($2::bigint[])) RETURNING user_id
		), added AS (
			INSERT INTO `+s.q+`.user_teams (user_id, team_id) SELECT id, $1 FROM known
			ON CONFLICT DO NOTHING RETURNING user_id
		), touched AS (
			UPDATE `+s.q+`.users SET linkage_hash = NULL
			WHERE id IN (SELECT user_id FROM gone UNION SELECT user_id FROM added) AND linkage_hash IS NOT NULL
		)
		SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM gone),
			(SELECT count(DISTINCT m) FROM unnest($2::bigint[]) AS m) - (SELECT count(*) FROM known)`, team, members)
		return row.Scan(&added, &removed, &absent)
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("replacing members of team %d: %w", team, err)
	}
	return added, removed, absent, nil
}
