package users

import (
	"context"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// WritePage writes one page of a users walk with the run's checkpoint in one
// transaction, so a page is stored with the cursor past it or not at all. It
// calls after for the checkpoint the page follows; the caller orders the
// pages and stores the returned checkpoint.
func (s *Store) WritePage(ctx context.Context, rows []normalize.Row, bad []warehouse.Quarantined, w pgrow.Writer,
	after func() (warehouse.Checkpoint, error)) (warehouse.Checkpoint, error) {
	p, err := s.prepareUsers(ctx, rows, bad, w)
	if err != nil {
		return warehouse.Checkpoint{}, err
	}
	cp, err := after()
	if err != nil {
		p.rollback(ctx)
		return warehouse.Checkpoint{}, err
	}
	if p.quiet(&cp) {
		// Nothing to write, and the run's end (Runs.FinishWith) stores
		// the checkpoint after its last page: the page only read.
		p.rollback(ctx)
		return advance(cp, p.rows, p.c), nil
	}
	_, next, err := p.commit(ctx, &cp)
	return next, err
}
