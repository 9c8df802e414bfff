package warehouse

import (
	"context"

	"github.com/usersync/usersync/sync/normalize"
)

// LoadDimension, for the tests, writes the full list of one dimension (team, role or
// profile), held whole in memory, in one transaction: it is a
// DimensionLoad of one page. present holds every id the API returned,
// quarantined ones included.
func (s *Store) LoadDimension(ctx context.Context, typ string, rows []normalize.Row, bad []Quarantined, present []int64, runID int64) (Counts, error) {
	d, err := s.BeginDimension(ctx, typ, runID)
	if err != nil {
		return Counts{}, err
	}
	defer d.Close()
	if err := d.Page(ctx, rows, bad, present); err != nil {
		return Counts{}, err
	}
	return d.Finish(ctx)
}
