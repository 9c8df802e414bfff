package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
)

// run is the state of one Run.
type run struct {
	s           *Syncer
	req         Request
	runID       int64
	started     time.Time
	statsBefore jsonapi.Stats
	resumed     bool
	cp          warehouse.Checkpoint
	policyID    int64      // the personal-data policy it writes under (see notePolicy)
	from, until *time.Time // the users range requested
	dims        map[string]warehouse.Counts
	noTeamsData int64 // users whose teams linkage came without data
	// horizon is the latest updatedAt that moves the watermark (the start
	// plus Config.MaxFutureSkew); future counts the users updated after it.
	horizon    time.Time
	future     int64
	membership *MembershipSummary
	canWrite   *bool
	base       warehouse.Progress // counters of the resumed run, before this process
	// startWM is the watermark a new run started from, and page the digest
	// of its users walk when that was one page (see quietHint).
	startWM time.Time
	page    []byte
}

func (r *run) execute(ctx context.Context) (Summary, error) {
	r.horizon = r.started.Add(r.s.cfg.MaxFutureSkew)
	if err := r.plan(ctx); err != nil {
		return Summary{}, err
	}
	if err := r.startCheckpoint(ctx); err != nil {
		return Summary{}, err
	}
	log := r.s.cfg.Logger.With("run_id", r.runID, "kind", r.req.Kind)
	if r.req.JobID != nil {
		log = log.With("job_id", *r.req.JobID)
	}
	log.InfoContext(ctx, "run started", "resumed", r.resumed, "from", fmtTime(r.from), "until", fmtTime(r.until))
	// The users walk starts now: its first pages are fetched and typed
	// while the dimensions are written, and written after them.
	users := r.startUsers(ctx)
	if users != nil {
		defer users.pages.Stop()
	}
	var err error
	if r.dims, err = r.s.syncDimensions(ctx, dimensionPass{runID: r.runID, policyID: r.policyID,
		trustDigests: r.req.Kind == warehouse.KindIncremental}); err != nil {
		return Summary{}, fmt.Errorf("syncing dimensions: %w", err)
	}
	if err := r.syncUsers(ctx, users); err != nil {
		return Summary{}, fmt.Errorf("syncing users: %w", err)
	}
	switch {
	case r.noTeamsData > 0 && r.req.Kind == warehouse.KindIncremental:
		// Listing every team's members costs a request or more per team,
		// each sync: the next reconcile does it once.
		r.membership = &MembershipSummary{Deferred: r.noTeamsData}
	case r.noTeamsData > 0:
		m, err := r.s.syncMembership(ctx)
		if err != nil {
			return Summary{}, fmt.Errorf("syncing team membership: %w", err)
		}
		r.membership = &m
	}
	sum := r.summary()
	if err := r.finish(ctx, &sum); err != nil {
		return sum, err
	}
	// Fresh statistics before anything (a snapshot, an analyst) plans a
	// query over the rows just written. Not worth failing the run for.
	if err := r.s.users.Analyze(ctx, sum.Inserted+sum.Updated); err != nil {
		log.WarnContext(ctx, "refreshing statistics failed", "error", err)
	}
	if sum.FutureUpdatedAt > 0 {
		log.WarnContext(ctx, "users updated in the future did not move the watermark", "future_updated_at", sum.FutureUpdatedAt,
			"max_future_skew", r.s.cfg.MaxFutureSkew.String())
	}
	log.InfoContext(ctx, "run finished", "pages", sum.Pages, "inserted", sum.Inserted, "updated", sum.Updated,
		"quarantined", sum.Quarantined, "requests", sum.Requests, "duration_ms", sum.Duration.Milliseconds())
	return sum, nil
}

// finish records the run's success and sets sum's watermark to the one
// after it.
func (r *run) finish(ctx context.Context, sum *Summary) error {
	wm, err := r.s.store.Runs().Finish(ctx, r.cp.RunID, warehouse.RunSuccess{Summary: *sum,
		CanWrite: r.canWrite, Advance: r.advancesWatermark(), Checkpoint: &r.cp, Anchor: r.quietAnchor(*sum)})
	if err == nil && !wm.IsZero() {
		sum.Watermark = &wm
	}
	return err
}

// startCheckpoint completes the checkpoint the walk starts from: its
// horizon, and whether its pages have quarantine records to resolve.
func (r *run) startCheckpoint(ctx context.Context) error {
	r.cp.Horizon = r.horizon
	none, err := r.s.users.NoneUnresolved(ctx)
	r.cp.NoUnresolved = none
	return err
}

// advancesWatermark says whether the run's success moves the watermark: a
// backfill of a range that does not start at the beginning must not, or
// the next incremental sync would skip what lies before its range.
func (r *run) advancesWatermark() bool {
	return r.req.Kind != warehouse.KindBackfill || r.req.Since == nil
}

// plan resumes an unfinished or failed run of the same kind, or starts a
// new one with its range.
func (r *run) plan(ctx context.Context) error {
	store := r.s.store
	reads, err := store.Runs().ReadStart(ctx, r.req.Kind)
	if err != nil {
		return err
	}
	wm := reads.Watermark
	r.startWM = wm
	prev, err := r.runToResume(ctx, reads)
	if err != nil {
		return err
	}
	if prev != nil && r.sameRange(prev) {
		if err := store.Runs().Reopen(ctx, prev.ID, r.req.JobID); err != nil {
			return err
		}
		r.req.Kind = prev.Kind
		r.runID, r.resumed = prev.ID, true
		r.from, r.until = prev.RangeFrom, prev.RangeUntil
		r.cp = warehouse.Checkpoint{RunID: prev.ID, PolicyID: r.policyID, NextURL: prev.NextURL, Progress: prev.Progress}
		r.base = prev.Progress
		if prev.MaxUpdatedAt != nil {
			r.cp.MaxUpdatedAt = *prev.MaxUpdatedAt
		}
		return nil
	}
	if prev != nil {
		if err := store.Runs().Abandon(ctx, prev.ID); err != nil {
			return err
		}
	}
	switch r.req.Kind {
	case warehouse.KindIncremental:
		if wm.After(r.horizon) {
			// Left by a version that let a future updatedAt move it: this
			// run would see no change until that date.
			r.s.cfg.Logger.WarnContext(ctx, "the watermark lies in the future; set sync_state.watermark back to the last good updatedAt",
				"watermark", jsonapi.FormatTime(wm), "max_future_skew", r.s.cfg.MaxFutureSkew.String())
		}
		if !wm.IsZero() {
			from := wm.Add(-r.s.cfg.Lookback).Truncate(time.Millisecond)
			r.from = &from
		}
	case warehouse.KindBackfill:
		r.from, r.until = r.req.Since, r.req.Until
	}
	if r.runID, err = store.Runs().Start(ctx, r.req.Kind, r.from, r.until, r.req.JobID); err != nil {
		return err
	}
	r.cp = warehouse.Checkpoint{RunID: r.runID, PolicyID: r.policyID}
	return nil
}

// runToResume returns the interrupted run (unfinished, or failed with a next
// link) this request continues: the latest of its own kind or, for an
// incremental sync while no watermark exists, of a full run, the same walk
// of every user.
func (r *run) runToResume(ctx context.Context, reads warehouse.StartReads) (*warehouse.Run, error) {
	if reads.Resume != nil || r.req.Kind != warehouse.KindIncremental || !reads.Watermark.IsZero() {
		return reads.Resume, nil
	}
	prev, err := r.s.store.Runs().Unfinished(ctx, warehouse.KindFull)
	if err == nil && prev == nil {
		prev, err = r.s.store.Runs().FailedToResume(ctx, warehouse.KindFull)
	}
	return prev, err
}

// sameRange says whether a previous run can be resumed by this request: an
// incremental or full run always can; a backfill only with the same range.
func (r *run) sameRange(prev *warehouse.Run) bool {
	if r.req.Kind != warehouse.KindBackfill {
		return true
	}
	return sameTime(prev.RangeFrom, r.req.Since) && sameTime(prev.RangeUntil, r.req.Until)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return jsonapi.FormatTime(*t)
}

// isStaleCursor says whether resuming from a stored next link failed because
// the API no longer accepts it (a 4xx other than auth and rate limits), in
// which case the run restarts its range from the checkpointed updatedAt.
func isStaleCursor(err error) bool {
	var re *jsonapi.ResponseError
	return errors.As(err, &re) && re.StatusCode >= 400 && re.StatusCode < 500 &&
		re.StatusCode != 401 && re.StatusCode != 403 && re.StatusCode != 429
}

// fillRequests brings p's request counters up to date: those of the resumed
// run plus this process's since the run began.
func (r *run) fillRequests(p *warehouse.Progress) {
	now := r.s.client.Stats()
	p.Requests = r.base.Requests + now.Requests - r.statsBefore.Requests
	p.RateLimited = r.base.RateLimited + now.RateLimited - r.statsBefore.RateLimited
	p.Retries = r.base.Retries + now.Retries - r.statsBefore.Retries
}
