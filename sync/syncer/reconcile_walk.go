package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse/reconcile"
)

// heartbeatEvery is how many scan pages pass between two heartbeats.
const heartbeatEvery = 100

// scanAndCompare brings the scan up to date and checks it against the
// safety valve. A refused scan is not resumed: the next attempt lists every
// id again rather than trust a list that looked truncated.
func (r *reconciler) scanAndCompare(ctx context.Context, work *reconcile.Reconciliation) (reconcile.Comparison, error) {
	if err := r.scan(ctx, work); err != nil {
		return reconcile.Comparison{}, fmt.Errorf("scanning user ids: %w", err)
	}
	cmp, err := work.Compare(ctx)
	if err != nil {
		return cmp, err
	}
	r.sum.Scanned = cmp.Scanned
	if err := r.checkValve(cmp); err != nil {
		return cmp, r.refuseWalk(ctx, work, err)
	}
	r.sum.Confirmed = cmp.Gone
	return cmp, nil
}

// refuseWalk ends the walk when err refuses what it listed (the safety
// valve, or more deletions than it allowed), and returns err.
func (r *reconciler) refuseWalk(ctx context.Context, work *reconcile.Reconciliation, err error) error {
	var valve *SafetyValveError
	var tooMany *reconcile.TooManyDeletionsError
	if !errors.As(err, &valve) && !errors.As(err, &tooMany) {
		return err
	}
	return errors.Join(err, work.EndWalk(context.WithoutCancel(ctx)))
}

// scan streams the id, updatedAt and linkage of every user into the scan,
// one COPY per page with the link to the next page, while the next page
// downloads: memory stays at a few pages whatever the number of users. It
// resumes the walk an interrupted attempt left (see resume), or walks from
// the first id. The walk is in id order, which updates do not change (unlike
// updatedAt's), so a resumed walk lists every id above its cursor as the API
// holds it now; below the cursor it keeps what the earlier attempt listed,
// as a walk that was never interrupted does for the ids it has passed (a
// live user it lacks is asked for by id before being marked deleted, and
// one created there reaches the warehouse with the next sync). An API that
// refuses include=teams refuses the first request, and the scan starts
// again without it.
func (r *reconciler) scan(ctx context.Context, work *reconcile.Reconciliation) error {
	origin, err := r.s.client.CollectionURL("users", jsonapi.Query{})
	if err != nil {
		return fmt.Errorf("building the users URL: %w", err)
	}
	walk, why, err := work.ResumableWalk(ctx, origin, r.s.cfg.ReconcileResumeWithin)
	if err != nil {
		return err
	}
	if why != "" {
		r.log.InfoContext(ctx, "the interrupted reconcile's id walk is not resumed; walking every id", "reason", why)
	}
	if walk != nil {
		if resumed, err := r.resume(ctx, work, walk); resumed || err != nil {
			return err
		}
	}
	if err := work.StartWalk(ctx, r.runID, origin); err != nil {
		return err
	}
	err = r.scanPages(ctx, work, r.s.client.Collection("users", r.s.scanQuery()))
	if err != nil && r.sum.ScanPages == 0 && r.s.refusedInclude(ctx, err) {
		err = r.scanPages(ctx, work, r.s.client.Collection("users", r.s.scanQuery()))
	}
	return err
}

// resume continues walk from its checkpointed link (nothing is left to fetch
// when it was complete). It returns false, having recorded nothing, when the
// stored link does not parse or the API refuses it at once (a cursor it no
// longer accepts): the caller then walks from the first id.
func (r *reconciler) resume(ctx context.Context, work *reconcile.Reconciliation, walk *reconcile.Walk) (bool, error) {
	r.log.InfoContext(ctx, "resuming the interrupted reconcile's id walk", "walk_run_id", walk.RunID,
		"pages_recorded", walk.Pages, "complete", walk.Complete, "age", walk.Age.Round(time.Second).String())
	r.sum.ScanResumed, r.sum.Unreadable = walk.Pages, walk.Unreadable
	if walk.Complete {
		return true, nil
	}
	next, err := r.s.client.CheckpointURL("users", walk.NextURL)
	if err == nil {
		err = r.scanPages(ctx, work, r.s.client.Resume(next))
		if err == nil || r.sum.ScanPages > 0 || !isStaleCursor(err) {
			return true, err
		}
	}
	r.log.WarnContext(ctx, "the interrupted reconcile's walk cannot go on from its link; walking every id", "error", err.Error())
	r.sum.ScanResumed, r.sum.Unreadable = 0, 0
	return false, nil
}

// scanPages walks pages, recording each page as it arrives with the link to
// the next one.
func (r *reconciler) scanPages(ctx context.Context, work *reconcile.Reconciliation, pages *jsonapi.Pages) error {
	buf := make([]reconcile.ScannedUser, 0, reconcilePageSize)
	for page, err := range jsonapi.Prefetch(ctx, pages, r.s.cfg.Prefetch).Pages() {
		if err != nil {
			return err // the client names the page and request; a cut walk says so
		}
		number := r.sum.ScanResumed + r.sum.ScanPages + 1
		unreadable := r.sum.Unreadable
		buf = scannedUsers(buf[:0], page.Data, &r.sum.Unreadable)
		next, err := r.s.client.CheckpointURL("users", page.NextURL)
		if err != nil {
			return fmt.Errorf("checkpointing scan page %d: %w", number, err)
		}
		if err := work.RecordPage(ctx, buf, r.sum.Unreadable-unreadable, next); err != nil {
			return fmt.Errorf("recording scan page %d: %w", number, err)
		}
		r.sum.ScanPages++
		r.progress(len(page.Data))
		if r.sum.ScanPages%heartbeatEvery == 0 {
			r.fillRequestCounters()
			if err := r.s.store.Runs().Touch(ctx, r.runID, r.cp.Progress); err != nil {
				return err
			}
		}
	}
	return nil
}
