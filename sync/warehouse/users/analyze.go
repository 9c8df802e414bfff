package users

import (
	"context"
	"fmt"
)

// Analyze refreshes the statistics of a sync's tables once a run wrote enough
// users, because autovacuum may come too late for the next snapshot: without
// them, one of 100,000 users took 15 minutes instead of 8 seconds.
func (s *Store) Analyze(ctx context.Context, usersWritten int64) error {
	// A run that wrote nothing left the statistics as they were; skipping
	// the check spares a no-op run one transaction.
	if usersWritten <= 0 {
		return nil
	}
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
