package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// Deps are what the workers call. Workers are thin: they open the job's
// account, run its syncer or snapshot writer and map the outcome for River.
type Deps struct {
	// Accounts opens the account of each job, the environment's as any
	// other; nil: every job is cancelled.
	Accounts AccountSource
	// Remedy, when set, says what to do when the API refuses the
	// credentials of account (a registered one's names it: usersync auth
	// login --account NAME), for the error logged in place of the
	// Account's AuthRemedy.
	Remedy func(ctx context.Context, account string) string
	// JobTimeout bounds a snapshot (0: no bound); River rescues a snapshot
	// job still marked running an hour after it.
	JobTimeout time.Duration
	// TimeSlice bounds one go of a sync, backfill or reconcile (slice.go);
	// 0: DefaultTimeSlice.
	TimeSlice time.Duration
	// SlotTime bounds a run of an incremental sync in the normal lane
	// (QueueSync); past it the run yields its slot and continues in the
	// slow lane (lanes.go). 0: no bound.
	SlotTime time.Duration
	// Drain is closed when the process starts stopping: runs end after the
	// page in flight commits and snooze, to resume on the next worker, and
	// no job starts a run.
	Drain <-chan struct{}
	// Observe, when set, is told of every finished run of account. kind is
	// the job's metric kind, MetricIncremental or MetricBackfill: a full
	// backfill is a backfill, though its run is recorded as
	// warehouse.KindFull.
	Observe func(account, kind string, sum syncer.Summary, err error, d time.Duration)
	// ObserveReconcile, when set, is told of every finished reconcile.
	ObserveReconcile func(account string, sum syncer.ReconcileSummary, err error, d time.Duration)
	// ObserveSnapshot, when set, is told of every snapshot job that ran
	// the snapshot writer.
	ObserveSnapshot func(account string, out SnapshotOutcome, err error)
	// ObserveYield, when set, is told of every run of account that yielded
	// its slot to continue in the slow lane.
	ObserveYield func(account string)
	Logger       *slog.Logger

	pool *pgxpool.Pool // River's database, set by NewClient: a lock waiter continues in a transaction
}

// snapshotTimeout is River's timeout of a snapshot job: an hour above
// JobTimeout, which the worker applies itself, so that River's rescuer
// never takes a snapshot that may still run.
func (d *Deps) snapshotTimeout() time.Duration {
	if d.JobTimeout <= 0 {
		return -1 // River: no timeout, no rescue
	}
	return d.JobTimeout + time.Hour
}

// The kind label of the metrics of runs: the job that ran, not the run's
// kind (a full backfill runs a warehouse.KindFull run).
const (
	MetricIncremental = "incremental"
	MetricBackfill    = "backfill"
)

// runSync runs one sync of req for job in account a, tells Observe of it
// under the metric kind metric, and maps its outcome. A sync lock held by
// another run of the account snoozes the job at once (no LockTimeout): a
// job waiting in a worker slot would hold back every other account's. A
// run still going after slot (0: no bound) yields it (lanes.go), one still
// going at the end of its time slice snoozes to resume (slice.go).
func (d *Deps) runSync(ctx context.Context, a *Account, job *rivertype.JobRow, metric string, req syncer.Request, slot time.Duration) error {
	req.JobID, req.Drain = &job.ID, d.Drain
	start := time.Now()
	sctx, unslice := withSlice(ctx, d.sliceOf(job))
	rctx, release := withSlot(sctx, slot)
	sum, err := a.Syncer.Run(rctx, req)
	release()
	unslice()
	if d.Observe != nil {
		d.Observe(a.Name, metric, sum, err, time.Since(start))
	}
	if errors.Is(err, ErrYielded) && ctx.Err() == nil {
		return d.yield(ctx, a, job, slot, err)
	}
	if err != nil {
		d.logEnd(ctx, a, job, req.Kind, err)
		return d.outcome(ctx, err, job)
	}
	d.afterRun(ctx, a, true, sum.Changed())
	return nil
}

// stopping snoozes a job the process took while it was stopping (River may
// start a job fetched as it stops): no new run starts after "no new jobs",
// and the job runs on the next worker.
func (d *Deps) stopping(ctx context.Context, job *rivertype.JobRow, account string) error {
	select {
	case <-d.Drain:
		d.Logger.InfoContext(ctx, "the worker is stopping: the job runs again on the next worker", "account", AccountName(account),
			"job_id", job.ID, "kind", job.Kind)
		return river.JobSnooze(drainedSnooze)
	default:
		return nil
	}
}

// start is what every job does first: snooze when the process stops, then
// open its account (a paused or removed one cancels the job).
func (d *Deps) start(ctx context.Context, job *rivertype.JobRow, account string) (*Account, error) {
	if err := d.stopping(ctx, job, account); err != nil {
		return nil, err
	}
	return d.account(ctx, job, account)
}

// errSnapshotsOff cancels a snapshot job on a worker without a destination.
var errSnapshotsOff = errors.New("snapshots are not configured on this worker (USERSYNC_SNAPSHOT_DIR)")

// afterRun enqueues a snapshot of a when snapshots follow runs and the run
// changed something (changed; a snapshot of an unchanged warehouse would be
// skipped, after a job's worth of work), or when the
// last snapshot job was skipped because no run had completed (a run was
// under way, or stopped part way): that snapshot waited for a run to
// succeed, this one, rather than for the next tick of its schedule; but
// not after a reconcile (walks false) when no sync had walked every user
// yet, which only a sync's success changes. The snapshot is a job of its
// own, so a failing destination never fails the sync.
func (d *Deps) afterRun(ctx context.Context, a *Account, walks, changed bool) {
	if a.Snapshot == nil {
		return
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return // not run by a River client (tests calling Work directly)
	}
	if (!a.SnapshotAfterSync || !changed) && !lastSnapshotWaits(ctx, client, a.Name, walks) {
		return
	}
	if _, err := client.Insert(ctx, SnapshotArgs{Account: accountArg(a.Name)}, nil); err != nil {
		a.Logger.WarnContext(ctx, "could not enqueue the snapshot after the run", "error", err.Error())
	}
}

// SyncWorker runs incremental syncs.
type SyncWorker struct {
	river.WorkerDefaults[SyncArgs]
	d *Deps
}

// Timeout implements river.Worker: the job's slice and its grace.
func (w *SyncWorker) Timeout(job *river.Job[SyncArgs]) time.Duration {
	return w.d.sliceTimeout(job.JobRow)
}

// Work implements river.Worker.
func (w *SyncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	// An open account is tried as it is: the quiet run's guard stands for
	// the checks of opening it, which only a run in full then makes.
	var a *Account
	if w.d.Accounts != nil {
		a = w.d.Accounts.Opened(AccountName(job.Args.Account))
	}
	opened := a == nil
	if opened {
		var err error
		if a, err = w.d.start(ctx, job.JobRow, job.Args.Account); err != nil {
			return err
		}
	}
	if w.d.quiet(ctx, job.JobRow, a) {
		return nil
	}
	if !opened {
		var err error
		if a, err = w.d.start(ctx, job.JobRow, job.Args.Account); err != nil {
			return err
		}
	}
	slot := w.d.SlotTime
	if job.Args.Slow {
		slot = 0 // the slow lane: the job timeout alone bounds its run
	}
	return w.d.runSync(ctx, a, job.JobRow, MetricIncremental, syncer.Request{Kind: warehouse.KindIncremental}, slot)
}

// quiet runs job's sync in account a as one statement (syncer.Quiet) when
// a's last run changed nothing, under a's Guard. It reports whether the job
// is done; if not, the job runs in full.
func (d *Deps) quiet(ctx context.Context, job *rivertype.JobRow, a *Account) bool {
	if a.Syncer == nil {
		return false
	}
	start := time.Now()
	sum, ok := a.Syncer.Quiet(ctx, syncer.Request{Kind: warehouse.KindIncremental, JobID: &job.ID, Drain: d.Drain, Guard: a.Guard})
	if !ok {
		return false
	}
	if d.Observe != nil {
		d.Observe(a.Name, MetricIncremental, sum, nil, time.Since(start))
	}
	d.afterRun(ctx, a, true, false)
	return true
}

// BackfillWorker runs backfills: a full sync, or a closed updatedAt range.
type BackfillWorker struct {
	river.WorkerDefaults[BackfillArgs]
	d *Deps
}

// Timeout implements river.Worker: the job's slice and its grace.
func (w *BackfillWorker) Timeout(job *river.Job[BackfillArgs]) time.Duration {
	return w.d.sliceTimeout(job.JobRow)
}

// Work implements river.Worker.
func (w *BackfillWorker) Work(ctx context.Context, job *river.Job[BackfillArgs]) error {
	a, err := w.d.start(ctx, job.JobRow, job.Args.Account)
	if err != nil {
		return err
	}
	req := syncer.Request{Kind: warehouse.KindBackfill, Since: job.Args.Since, Until: job.Args.Until}
	if job.Args.Full || (job.Args.Since == nil && job.Args.Until == nil) {
		req = syncer.Request{Kind: warehouse.KindFull}
	}
	return w.d.runSync(ctx, a, job.JobRow, MetricBackfill, req, 0)
}

// lastSnapshotWaits reports whether the newest completed snapshot job of
// account was skipped because no run had completed (SnapshotOutcome.NotReady)
// and a run that walks users (walks) or any run may make the next one ready.
func lastSnapshotWaits(ctx context.Context, client *river.Client[pgx.Tx], account string, walks bool) bool {
	params := river.NewJobListParams().Kinds(KindSnapshot).States(rivertype.JobStateCompleted).
		OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(1)
	params = params.Where("coalesce(args->>'account', '') = @account", river.NamedArgs{"account": accountArg(account)})
	res, err := client.JobList(ctx, params)
	if err != nil || len(res.Jobs) == 0 {
		return false // at worst the snapshot waits for its schedule
	}
	var out SnapshotOutcome
	return json.Unmarshal(res.Jobs[0].Output(), &out) == nil && out.NotReady && (walks || !out.WaitsForWalk)
}

// SnapshotWorker writes Parquet snapshots.
type SnapshotWorker struct {
	river.WorkerDefaults[SnapshotArgs]
	d *Deps
}

// Timeout implements river.Worker.
func (w *SnapshotWorker) Timeout(*river.Job[SnapshotArgs]) time.Duration {
	return w.d.snapshotTimeout()
}

// Work implements river.Worker.
func (w *SnapshotWorker) Work(ctx context.Context, job *river.Job[SnapshotArgs]) error {
	a, err := w.d.start(ctx, job.JobRow, job.Args.Account)
	if err != nil {
		return err
	}
	if a.Snapshot == nil {
		return river.JobCancel(errSnapshotsOff)
	}
	sctx := ctx
	if w.d.JobTimeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, w.d.JobTimeout)
		defer cancel()
	}
	out, err := a.Snapshot(sctx)
	if w.d.ObserveSnapshot != nil {
		w.d.ObserveSnapshot(a.Name, out, err)
	}
	if err != nil {
		return err
	}
	return river.RecordOutput(ctx, out) // read by status
}

// SnapshotOutcome is what a snapshot job did, kept as the job's output.
type SnapshotOutcome struct {
	// ID is the snapshot written or, when Skipped because nothing changed,
	// the newest complete one, which holds the same content; empty when
	// Skipped because the warehouse was not as a completed sync left it.
	ID      string `json:"id"`
	Skipped bool   `json:"skipped"`
	// Reason says why a snapshot was skipped.
	Reason string `json:"reason,omitempty"`
	// NotReady marks a snapshot skipped because no run had completed (one
	// was under way or stopped part way, or none had walked every user yet):
	// the next run to succeed enqueues a snapshot, whatever
	// SnapshotAfterSync says.
	NotReady bool `json:"not_ready,omitempty"`
	// WaitsForWalk marks a NotReady snapshot skipped while no sync had
	// walked every user yet: a reconcile's success does not make the next
	// one ready, and enqueues none.
	WaitsForWalk bool `json:"waits_for_walk,omitempty"`
	// Bytes is the size of the Parquet files of snapshot ID (the metric
	// usersync_snapshot_last_bytes).
	Bytes int64 `json:"bytes,omitempty"`
}
