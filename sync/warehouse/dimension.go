package warehouse

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/normalize"
)

// LoadDimension writes the full list of one dimension (team, role or
// profile) in one transaction: upserts every row, clears deleted_at of ids
// that came back, and marks live ids that are not in the list deleted.
// present holds every id the API returned, quarantined ones included, so a
// resource that could not be typed is never taken for a deleted one. An
// empty list never deletes everything: it is reported as a refusal.
func (s *Store) LoadDimension(ctx context.Context, typ string, rows []normalize.Row, bad []Quarantined, present []int64, runID int64) (Counts, error) {
	t, ok := s.tables[typ]
	if !ok || typ == "user" {
		return Counts{}, fmt.Errorf("loading dimension: %q is not a dimension", typ)
	}
	var c Counts
	rows = dedupe(rows)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if c, err = s.loadRows(ctx, tx, typ, rows); err != nil {
			return err
		}
		if len(present) == 0 {
			var live int64
			if err := tx.QueryRow(ctx, t.liveCount).Scan(&live); err != nil {
				return fmt.Errorf("counting live %s: %w", t.res.Table, err)
			}
			if live > 0 {
				return &EmptyListError{Table: t.res.Table, Live: live}
			}
		}
		tag, err := tx.Exec(ctx, t.softDelete, present)
		if err != nil {
			return fmt.Errorf("marking deleted %s: %w", t.res.Table, err)
		}
		c.Deleted = tag.RowsAffected()
		b := &pgx.Batch{}
		s.queueQuarantine(b, typ, rows, bad, runID)
		c.Quarantined = int64(len(bad))
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return Counts{}, fmt.Errorf("loading %s: %w", t.res.Table, err)
	}
	return c, nil
}

// EmptyListError refuses to mark every row of a dimension deleted because
// the API returned an empty list: an empty page is not a mass deletion.
type EmptyListError struct {
	Table string
	Live  int64
}

func (e *EmptyListError) Error() string {
	return fmt.Sprintf("the API returned no %s while the warehouse has %d live; refusing to mark them all deleted", e.Table, e.Live)
}
