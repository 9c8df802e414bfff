package users

import (
	"context"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// PreparePage writes one page of a users walk in a transaction of its own,
// on a connection of its own, without committing it: its rows, versions and
// new users' teams, the bulk of the work. The page is then the caller's to
// end, once it may commit, with Commit (the page and the run's checkpoint in
// that one transaction) or Rollback. w names the run and the policy in what
// the page writes (warehouse.Checkpoint.Writer).
//
// Several pages may be prepared at once, but the caller orders them: each
// commits after the page before it, and two pages sharing a user are not
// prepared at once (see PreparedPage). The syncer's pipeline does both.
func (s *Store) PreparePage(ctx context.Context, rows []normalize.Row, bad []warehouse.Quarantined, w pgrow.Writer) (*PreparedPage, error) {
	return s.prepareUsers(ctx, rows, bad, w)
}

// Commit commits the page with cp, the checkpoint the page follows (its
// NextURL and request counters filled in), advanced by the page, and
// returns the checkpoint after the page. A failed commit is rolled back.
//
// The walk's last page (cp.NextURL "") when it changes nothing (see quiet)
// is not committed but rolled back: its checkpoint, returned, is the
// caller's to store with the run's end (warehouse.RunSuccess.Checkpoint).
func (p *PreparedPage) Commit(ctx context.Context, cp warehouse.Checkpoint) (warehouse.Checkpoint, error) {
	if p.quiet(&cp) {
		p.rollback(ctx)
		return Advance(cp, p.rows, p.c), nil
	}
	_, next, err := p.commit(ctx, &cp)
	return next, err
}

// Rollback abandons the page: nothing of it is stored. It does nothing
// after Commit, and may be called more than once.
func (p *PreparedPage) Rollback(ctx context.Context) { p.rollback(ctx) }
