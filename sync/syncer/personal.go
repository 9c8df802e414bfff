package syncer

import (
	"context"
)

// notePolicy records the personal-data policy a run writes under, so status
// and pii apply know which policies the warehouse holds rows of; it returns
// the policy's id, which the run writes on each user (Checkpoint.PolicyID).
func (s *Syncer) notePolicy(ctx context.Context) (int64, error) {
	return s.personal.NotePolicy(ctx)
}

// purge removes the users marked deleted longer ago than
// Config.DeletedRetention, with their history, memberships and quarantine
// records.
func (r *reconciler) purge(ctx context.Context) error {
	if r.s.cfg.DeletedRetention <= 0 {
		return nil
	}
	cutoff := r.s.cfg.Now().Add(-r.s.cfg.DeletedRetention)
	var err error
	r.sum.Purged, r.sum.PurgedVersions, err = r.s.personal.PurgeDeleted(ctx, r.s.store.Pool(), cutoff)
	if err == nil && r.sum.Purged > 0 {
		r.log.InfoContext(ctx, "purged users deleted longer ago than the retention", "users", r.sum.Purged,
			"versions", r.sum.PurgedVersions, "retention", r.s.cfg.DeletedRetention.String())
	}
	return err
}
