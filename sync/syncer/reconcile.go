package syncer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/reconcile"
)

// Defaults of a ReconcileRequest.
const (
	// DefaultMaxDeleteShare is the largest share of the live users one
	// reconcile marks deleted before its safety valve stops it.
	DefaultMaxDeleteShare = 0.05
	// DefaultMaxRequestLine is the request-line budget of a fetch by id
	// (GET /api/v2/users?filter[id]=… HTTP/1.1), well under the 8 KB that
	// servers and proxies commonly accept, leaving room for the page[after]
	// a capped page's next link adds.
	DefaultMaxRequestLine = 6 << 10
)

// ReconcileRequest says how a reconcile runs.
type ReconcileRequest struct {
	// WaitLock waits for a running sync to finish instead of failing with
	// warehouse.ErrLocked.
	WaitLock bool
	// MaxDeleteShare is the largest share (0 to 1] of the live users the run
	// may mark deleted; more stops it with a *SafetyValveError and marks
	// nothing. 0 means DefaultMaxDeleteShare. An empty scan never deletes.
	MaxDeleteShare float64
	// MaxRequestLine bounds the request line of each fetch by id, in bytes;
	// 0 means DefaultMaxRequestLine.
	MaxRequestLine int
	// JobID is the River job running this, if any.
	JobID *int64
	// Membership says when to list every team's members (one request or
	// more per team): MembershipAuto (the default) only when the last
	// sync found users' teams sent without data, so the per-team listing is
	// the only source of membership; MembershipAlways; MembershipNever.
	Membership string
}

// Membership check modes of ReconcileRequest.
const (
	MembershipAuto   = "auto"
	MembershipAlways = "always"
	MembershipNever  = "never"
)

// ReconcileSummary is the outcome of a reconcile, printed by the CLI and
// stored in sync_runs.summary.
type ReconcileSummary struct {
	Version int    `json:"version"` // SummaryVersion
	RunID   int64  `json:"run_id"`
	Kind    string `json:"kind"`
	// Scanned counts the distinct user ids the API listed; ScanPages the
	// pages it took. Unreadable counts listed resources without a usable id.
	Scanned    int64 `json:"scanned"`
	ScanPages  int64 `json:"scan_pages"`
	Unreadable int64 `json:"unreadable"`
	// ScanResumed counts the scan pages an interrupted reconcile recorded,
	// whose walk this one resumed after them instead of fetching them again.
	ScanResumed int64 `json:"scan_resumed_pages"`
	// Missing, Stale and Relinked count the ids fetched by id because the
	// warehouse lacked them, held an older updatedAt, or linked them to
	// teams, roles or profiles otherwise than the scan showed (one deleted
	// or come back, seen by the warehouse or not). Confirmed counts
	// the live users the scan did not list: each is asked for by id before
	// it is marked deleted.
	Missing   int64 `json:"missing"`
	Stale     int64 `json:"stale"`
	Relinked  int64 `json:"relinked"`
	Confirmed int64 `json:"confirmed"`
	// QuarantineSkipped counts missing or stale ids not fetched because the
	// quarantine holds them unchanged.
	QuarantineSkipped int64 `json:"quarantine_skipped"`
	// FetchPages counts the pages fetched by id; NotReturned the ids they
	// asked for that the API did not return.
	FetchPages  int64 `json:"fetch_pages"`
	NotReturned int64 `json:"not_returned"`
	// Progress is what loading the fetched users did, and the requests, as
	// in a sync's summary; its Deleted counts the users marked deleted.
	warehouse.Progress
	// Undeleted counts users that came back.
	Undeleted int64 `json:"undeleted"`
	// Purged counts the users removed, with PurgedVersions versions, for
	// being marked deleted longer ago than Config.DeletedRetention.
	Purged         int64 `json:"purged"`
	PurgedVersions int64 `json:"purged_versions"`
	// Dimensions is the teams/roles/profiles pass; DimensionsUndeleted
	// counts, by table, the ids that came back since the last reconcile
	// that succeeded, in this pass or a sync's.
	Dimensions          map[string]warehouse.Counts `json:"dimensions"`
	DimensionsUndeleted map[string]int64            `json:"dimensions_undeleted"`
	Membership          MembershipSummary           `json:"membership"`
	Duration            time.Duration               `json:"duration_ns"`
}

// SafetyValveError stops a reconcile whose scan would mark too many users
// deleted: an API that answered with an empty or truncated list is not a
// mass deletion. Nothing was marked.
type SafetyValveError struct {
	WouldDelete int64   // live users the scan did not list
	Live        int64   // live users in the warehouse
	Scanned     int64   // distinct ids the scan listed
	Share       float64 // WouldDelete / Live
	MaxShare    float64 // the share allowed
}

func (e *SafetyValveError) Error() string {
	return fmt.Sprintf("safety valve: the API listed %d users and %d of the %d live ones are missing from it (%.1f%%, more than the %.1f%% allowed); nothing was marked deleted",
		e.Scanned, e.WouldDelete, e.Live, 100*e.Share, 100*e.MaxShare)
}

// Reconcile lists every user id with its updatedAt and its linkage to
// teams, roles and profiles, fetches by id the users the warehouse lacks,
// holds stale or links otherwise, marks deleted the users the API no
// longer returns (unmarking those that came back), runs the dimension pass
// and checks every live team's membership. It holds the sync lock, records
// the run in sync_runs (kind reconcile) and never moves the watermark.
func (s *Syncer) Reconcile(ctx context.Context, req ReconcileRequest) (ReconcileSummary, error) {
	if req.MaxDeleteShare < 0 || req.MaxDeleteShare > 1 {
		return ReconcileSummary{}, fmt.Errorf("reconciling: MaxDeleteShare must be between 0 and 1, got %v", req.MaxDeleteShare)
	}
	if req.MaxDeleteShare == 0 {
		req.MaxDeleteShare = DefaultMaxDeleteShare
	}
	if req.MaxRequestLine <= 0 {
		req.MaxRequestLine = DefaultMaxRequestLine
	}
	lock, err := s.lockNow(ctx, req.WaitLock)
	if err != nil {
		return ReconcileSummary{}, err
	}
	defer lock.Release()
	policyID, err := s.notePolicy(ctx)
	if err != nil {
		return ReconcileSummary{}, err
	}

	r := &reconciler{s: s, req: req, started: s.cfg.Now(), statsBefore: s.client.Stats(), policyID: policyID,
		sum: ReconcileSummary{Version: SummaryVersion, Kind: warehouse.KindReconcile}}
	sum, err := r.execute(ctx)
	if err != nil && r.runID != 0 {
		r.fillRequestCounters()
		return sum, s.endRun(ctx, r.runID, err, r.cp.Progress)
	}
	return sum, interrupted(ctx, err)
}

// reconciler is the state of one Reconcile.
type reconciler struct {
	s           *Syncer
	req         ReconcileRequest
	runID       int64
	started     time.Time
	statsBefore jsonapi.Stats
	cp          warehouse.Checkpoint
	policyID    int64 // the personal-data policy it writes under (see notePolicy)
	sum         ReconcileSummary
	pages       int64 // scan and fetch pages, for Progress
	rows        int64
	log         *slog.Logger
	// deletedDims holds, by type, the teams, roles and profiles marked
	// deleted after the dimension pass.
	deletedDims map[string][]int64
}

// execute runs the passes in an order that keeps every step safe to stop:
// nothing is written to users before the scan has been checked against the
// safety valve, and users are marked deleted only after the ids in doubt
// were asked for by id.
func (r *reconciler) execute(ctx context.Context) (ReconcileSummary, error) {
	if err := r.start(ctx); err != nil {
		return r.sum, err
	}
	err := r.s.users.EnsureTeamIndex(ctx, r.s.cfg.Logger) // the membership pass needs it
	if err != nil {
		return r.summary(), err
	}
	if r.sum.Dimensions, err = r.s.syncDimensions(ctx, dimensionPass{runID: r.runID, policyID: r.policyID}); err != nil {
		return r.summary(), fmt.Errorf("syncing dimensions: %w", err)
	}
	work, err := reconcile.Begin(ctx, r.s.store)
	if err != nil {
		return r.summary(), err
	}
	defer work.Close()
	if err := r.noteDimensionChanges(ctx, work); err != nil {
		return r.summary(), err
	}
	cmp, err := r.scanAndCompare(ctx, work)
	if err != nil {
		return r.summary(), err
	}
	if r.sum.Undeleted, err = work.Undelete(ctx, r.runID); err != nil {
		return r.summary(), err
	}
	if err := r.queue(ctx, work); err != nil {
		return r.summary(), err
	}
	err = r.fetchQueued(ctx, work)
	if err != nil && r.s.refusedInclude(ctx, err) {
		err = r.fetchQueued(ctx, work) // the first request failed: fetch without include
	}
	if err != nil {
		return r.summary(), fmt.Errorf("fetching users by id: %w", err)
	}
	if r.sum.Deleted, err = work.MarkDeleted(ctx, r.runID, cmp.Gone); err != nil {
		return r.summary(), r.refuseWalk(ctx, work, err)
	}
	if err := work.EndWalk(ctx); err != nil { // its work is done: the next reconcile walks afresh
		return r.summary(), err
	}
	check, err := r.membershipNeeded(ctx)
	if err != nil {
		return r.summary(), err
	}
	if check {
		if r.sum.Membership, err = r.s.syncMembership(ctx); err != nil {
			return r.summary(), fmt.Errorf("checking team membership: %w", err)
		}
	}
	return r.finish(ctx)
}

// start abandons a reconcile that died and records a new run, which
// resumes its id walk (see scan).
func (r *reconciler) start(ctx context.Context) error {
	store := r.s.store
	prev, err := store.Runs().Unfinished(ctx, warehouse.KindReconcile)
	if err != nil {
		return err
	}
	if prev != nil {
		if err := store.Runs().Abandon(ctx, prev.ID); err != nil {
			return err
		}
	}
	if r.runID, err = store.Runs().Start(ctx, warehouse.KindReconcile, nil, nil, r.req.JobID); err != nil {
		return err
	}
	r.sum.RunID = r.runID
	r.cp = warehouse.Checkpoint{RunID: r.runID, PolicyID: r.policyID}
	r.log = r.s.cfg.Logger.With("run_id", r.runID, "kind", warehouse.KindReconcile)
	r.log.InfoContext(ctx, "reconcile started", "max_delete_share", r.req.MaxDeleteShare)
	return nil
}

// noteDimensionChanges notes, after the dimension pass, the teams, roles
// and profiles marked deleted, and those that came back since the last
// reconcile that succeeded, whichever run brought them back (its own
// dimension pass, a sync's, or a reconcile that failed after its own).
func (r *reconciler) noteDimensionChanges(ctx context.Context, work *reconcile.Reconciliation) error {
	var err error
	if r.deletedDims, err = work.DeletedDimensionIDs(ctx); err != nil {
		return err
	}
	restored, err := work.RestoredDimensionIDs(ctx)
	if err != nil {
		return err
	}
	r.sum.DimensionsUndeleted = map[string]int64{}
	for typ, ids := range restored {
		r.sum.DimensionsUndeleted[tableOf(typ)] = int64(len(ids))
	}
	return nil
}

// checkValve refuses a scan that would mark more than the allowed share of
// the live users deleted, and an empty scan of a non-empty warehouse.
func (r *reconciler) checkValve(c reconcile.Comparison) error {
	if c.Gone == 0 {
		return nil
	}
	share := float64(c.Gone) / float64(c.Live)
	if c.Scanned > 0 && share <= r.req.MaxDeleteShare {
		return nil
	}
	return &SafetyValveError{WouldDelete: c.Gone, Live: c.Live, Scanned: c.Scanned, Share: share, MaxShare: r.req.MaxDeleteShare}
}

// queue fills the fetch queue: missing and stale ids, users linked to
// deleted dimensions or otherwise than the scan showed, and live users the
// scan did not list.
func (r *reconciler) queue(ctx context.Context, work *reconcile.Reconciliation) error {
	q, err := work.QueueChanged(ctx)
	if err != nil {
		return err
	}
	r.sum.Missing, r.sum.Stale, r.sum.QuarantineSkipped = q.Missing, q.Stale, q.QuarantineSkipped
	n, err := work.QueueDeletedLinks(ctx, r.deletedDims)
	if err != nil {
		return err
	}
	r.sum.Relinked += n
	// Whether or not the warehouse saw the deletion, a team, role or profile
	// that was deleted or came back shows in the linkage the scan carried.
	if n, err = work.QueueLinkage(ctx); err != nil {
		return err
	}
	r.sum.Relinked += n
	_, err = work.QueueGone(ctx) // those already queued for another reason are fetched once
	return err
}

// finish records the summary and ends the run without moving the watermark.
func (r *reconciler) finish(ctx context.Context) (ReconcileSummary, error) {
	if err := r.purge(ctx); err != nil {
		return r.summary(), err
	}
	sum := r.summary()
	if err := r.s.store.Runs().Touch(ctx, r.runID, r.cp.Progress); err != nil {
		return sum, err
	}
	if _, err := r.s.store.Runs().Finish(ctx, r.runID, warehouse.RunSuccess{Summary: sum}); err != nil {
		return sum, err
	}
	r.log.InfoContext(ctx, "reconcile finished", "scanned", sum.Scanned, "missing", sum.Missing, "stale", sum.Stale,
		"relinked", sum.Relinked, "deleted", sum.Deleted, "undeleted", sum.Undeleted, "purged", sum.Purged,
		"membership_added", sum.Membership.Added, "membership_removed", sum.Membership.Removed,
		"requests", sum.Requests, "duration_ms", sum.Duration.Milliseconds())
	return sum, nil
}

// summary fills the counters kept in the checkpoint and the client's.
func (r *reconciler) summary() ReconcileSummary {
	r.fillRequestCounters()
	p := r.cp.Progress
	sum := r.sum
	p.Deleted = sum.Deleted // the users marked deleted: the loaded pages mark none
	if p.Unknown == nil {
		p.Unknown = map[string]int{}
	}
	sum.Progress = p
	sum.Duration = r.s.cfg.Now().Sub(r.started)
	return sum
}

// fillRequestCounters brings the checkpoint's request counters up to date.
func (r *reconciler) fillRequestCounters() {
	now := r.s.client.Stats()
	r.cp.Progress.Requests = now.Requests - r.statsBefore.Requests
	r.cp.Progress.RateLimited = now.RateLimited - r.statsBefore.RateLimited
	r.cp.Progress.Retries = now.Retries - r.statsBefore.Retries
}

// progress reports a page to Config.Progress.
func (r *reconciler) progress(rows int) {
	r.pages++
	r.rows += int64(rows)
	if r.s.cfg.Progress != nil {
		r.s.cfg.Progress(Progress{RunID: r.runID, Kind: warehouse.KindReconcile, Pages: r.pages,
			Rows: r.rows, Elapsed: r.s.cfg.Now().Sub(r.started)})
	}
}

// membershipNeeded applies ReconcileRequest.Membership. When users carry
// their teams (the usual case), membership is repaired with the users a
// reconcile fetches, and listing every team (one request per team: 40,000
// for a million users with a team per 25) would spend the API budget for
// nothing.
func (r *reconciler) membershipNeeded(ctx context.Context) (bool, error) {
	switch r.req.Membership {
	case MembershipAlways:
		return true, nil
	case MembershipNever:
		return false, nil
	}
	return r.s.dims.LastSyncListedMembership(ctx)
}
