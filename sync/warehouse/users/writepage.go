package users

import (
	"context"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// WritePage writes one page of a users walk and the run's checkpoint in one
// transaction, on a connection of its own. It prepares the page first (its
// rows, versions and new users' teams: the bulk of the work), then calls
// after, which returns the checkpoint the page follows, its NextURL and
// request counters filled in, once the page may commit; it commits the page
// with that checkpoint advanced by it and returns the checkpoint after the
// page. When after fails, the page is rolled back and after's error
// returned; when preparing fails, after is not called. w names the run and
// the policy in what the page writes (warehouse.Checkpoint.Writer).
//
// Several pages may be written at once, but the caller orders them: each
// commits after the page before it (its after waits for that), and two
// pages sharing a user are not written at once (see userPage). The syncer's
// pipeline does both.
//
// The walk's last page (cp.NextURL "") when it changes nothing (see
// userPage.quiet) is not committed: its checkpoint, returned, is the
// caller's to store with the run's end.
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
		// Nothing to write, and the run's end (Runs.Finish) stores
		// the checkpoint after its last page: the page only read.
		p.rollback(ctx)
		return advance(cp, p.rows, p.c), nil
	}
	_, next, err := p.commit(ctx, &cp)
	return next, err
}
