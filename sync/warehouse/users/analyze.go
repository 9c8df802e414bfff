package users

import (
	"context"
	"fmt"
)

// Analyze refreshes PostgreSQL's statistics of the tables a sync writes,
// when the run wrote enough users for autovacuum to analyze them too (its
// own threshold, by the server's settings: 50 rows plus a tenth of the
// table), or users never was.
//
// Autovacuum would, but up to a naptime (a minute) later: too late for the
// snapshot that follows a backfill, and without statistics the planner takes
// freshly filled tables for nearly empty ones (the users_current view, which
// joins users to their teams, was planned as a nested loop over every team
// for every user: a snapshot of 100,000 users took 15 minutes instead of
// 8 seconds). A smaller run leaves statistics PostgreSQL deems fresh alone.
//
// For users it is a bridge to autovacuum's: the columns the views join and
// filter on, from a sample of 3,000 rows instead of 30,000. A column list
// leaves autovacuum's full ANALYZE due, so that one follows (figures in
// docs/benchmarks.md, "What the write path's choices are worth").
func (s *Store) Analyze(ctx context.Context, usersWritten int64) error {
	var due bool
	if err := s.pool.QueryRow(ctx, s.sql.analyzeDue, usersWritten).Scan(&due); err != nil {
		return fmt.Errorf("checking the statistics of users: %w", err)
	}
	if !due {
		return nil
	}
	if _, err := s.pool.Exec(ctx, s.sql.analyze); err != nil {
		return fmt.Errorf("analyzing the warehouse tables: %w", err)
	}
	return nil
}
