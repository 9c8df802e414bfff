package reconcile

import "context"

// QueuedByReason, for the tests, is queued: the ids queued, by why.
func (r *Reconciliation) QueuedByReason(ctx context.Context) (map[string]int64, error) {
	return r.queued(ctx)
}
