package users

import (
	"context"
	"fmt"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// Write writes one page of users in one transaction, as PreparePage and
// Commit do, and advances cp (nil: no checkpoint) once it has committed:
// for callers that write pages one at a time (the reconcile's fetches,
// tests).
func (s *Store) Write(ctx context.Context, rows []normalize.Row, bad []warehouse.Quarantined, cp *warehouse.Checkpoint) (warehouse.Counts, error) {
	var w pgrow.Writer
	if cp != nil {
		w = cp.Writer()
	}
	p, err := s.prepareUsers(ctx, rows, bad, w)
	if err != nil {
		return warehouse.Counts{}, err
	}
	c, next, err := p.commit(ctx, cp)
	if err == nil && cp != nil {
		*cp = next
	}
	return c, err
}

// Advance returns the checkpoint after a page: counters added, the greatest
// updatedAt seen, unknown attributes counted.
func Advance(cp warehouse.Checkpoint, rows []normalize.Row, c warehouse.Counts) warehouse.Checkpoint {
	p := &cp.Progress
	if c.Quarantined > 0 {
		cp.NoUnresolved = false
	}
	p.Pages++
	p.Fetched += int64(len(rows)) + c.Quarantined
	p.Add(c)
	unknown := make(map[string]int, len(p.Unknown))
	for k, v := range p.Unknown {
		unknown[k] = v
	}
	for _, r := range rows {
		for _, u := range r.Unknown {
			unknown[u]++
		}
		if r.UpdatedAt.After(cp.MaxUpdatedAt) && (cp.Horizon.IsZero() || !r.UpdatedAt.After(cp.Horizon)) {
			cp.MaxUpdatedAt = r.UpdatedAt
		}
	}
	p.Unknown = unknown
	return cp
}

// dedupe keeps one row per id, the one with the greatest updatedAt (the last
// one on ties), in first-seen order: a page may repeat an id.
func dedupe(rows []normalize.Row) []normalize.Row {
	seen := make(map[int64]int, len(rows))
	for i := range rows {
		if _, ok := seen[rows[i].ID]; ok {
			return dedupeCopy(rows)
		}
		seen[rows[i].ID] = i
	}
	return rows // the common case: no repeats, no copy
}

// dedupeCopy keeps, of each id, its row with the greatest updatedAt, in a new
// slice (the caller's is left alone).
func dedupeCopy(rows []normalize.Row) []normalize.Row {
	seen := make(map[int64]int, len(rows))
	out := rows[:0:0]
	for _, r := range rows {
		if i, ok := seen[r.ID]; ok {
			if !r.UpdatedAt.Before(out[i].UpdatedAt) {
				out[i] = r
			}
			continue
		}
		seen[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}

// loadState reports whether the warehouse holds no user at all, and
// whether user_teams' team_id index is missing.
func (s *Store) loadState(ctx context.Context) (empty, indexMissing bool, err error) {
	if err := s.pool.QueryRow(ctx, s.sql.loadState).Scan(&empty, &indexMissing); err != nil {
		return false, false, fmt.Errorf("checking whether users is empty: %w", err)
	}
	return empty, indexMissing, nil
}
