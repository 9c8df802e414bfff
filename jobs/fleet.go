package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// dueKept is how long the fleet's finished jobs (its ticks and remakes of
// the views) are kept: long enough to read a failing one's error in the
// job UI, short enough that one every few seconds does not pile up for the
// retention of the other jobs.
const dueKept = time.Hour

// pruneEvery is how often a tick prunes the fleet's finished jobs: a delete
// every tick would be one more transaction a second, for rows an hour old.
const pruneEvery = 5 * time.Minute

// DueWorker is the fleet's tick: one periodic job reads the registry and
// inserts, for each account not paused, the jobs its schedules (shifted by
// the account's phase, phaseFor) make due by the database's clock. River can
// add periodic jobs at run time, but one per account costs about 20 times
// the statements and 5 times the leader's CPU (BenchmarkScheduling), and a
// new leader would restart their periods; the tick's decision reads the jobs
// kept, whichever replica leads. Jobs are unique per account and kind while
// active, so ticks on several replicas add nothing. The environment's
// account is listed and scheduled as the registered ones. An account's
// first reconcile waits for its first completed sync.
type DueWorker struct {
	river.WorkerDefaults[DueArgs]
	list   ListAccounts
	river  *riverDB
	slot   time.Duration // the normal lane's slot time (Deps.SlotTime), which routes syncs
	logger *slog.Logger
	pruned atomic.Int64 // when this process last pruned (Unix nanoseconds)
}

// Timeout implements river.Worker.
func (w *DueWorker) Timeout(*river.Job[DueArgs]) time.Duration { return fleetTimeout }

// Work implements river.Worker.
// Its reads and inserts are one transaction: a tick a second is the
// largest share of an idle fleet's commits.
func (w *DueWorker) Work(ctx context.Context, job *river.Job[DueArgs]) error {
	// River logs a failed tick; the next tick tries again.
	err := pgx.BeginFunc(ctx, w.river.pool, func(tx pgx.Tx) error {
		accounts, err := w.list(ctx, tx)
		if err != nil {
			return fmt.Errorf("listing the accounts: %w", err)
		}
		params, err := w.dueJobs(ctx, tx, accounts)
		if err != nil || len(params) == 0 {
			return err
		}
		client := river.ClientFromContext[pgx.Tx](ctx)
		if _, err := client.InsertManyTx(ctx, tx, params); err != nil {
			return fmt.Errorf("inserting the accounts' %d due jobs: %w", len(params), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.prune(ctx)
	return nil
}

// prune deletes the fleet's finished jobs older than dueKept through
// River's API: one a tick would otherwise be kept for the retention of
// every other job. It prunes at most every pruneEvery.
func (w *DueWorker) prune(ctx context.Context) {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return // not run by a River client (tests calling Work directly)
	}
	now, last := time.Now().UnixNano(), w.pruned.Load()
	if now-last < pruneEvery.Nanoseconds() || !w.pruned.CompareAndSwap(last, now) {
		return
	}
	params := river.NewJobDeleteManyParams().First(1000).Kinds(KindDue, KindViews).
		States(rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded).
		Where("finalized_at < now() - make_interval(secs => @kept)", river.NamedArgs{"kept": dueKept.Seconds()})
	if _, err := client.JobDeleteMany(ctx, params); err != nil {
		w.logger.WarnContext(ctx, "could not delete the fleet's old jobs", "error", err.Error())
	}
}

// ViewsWorker remakes the fleet's union views when the registered accounts
// changed since they were made (accounts add --no-views), as a job of its
// own beside the tick: a remake over hundreds of accounts takes seconds,
// which in the tick would delay every account's due jobs. Its error fails
// the job (it is not retried: the next period's job tries again).
type ViewsWorker struct {
	river.WorkerDefaults[ViewsArgs]
	views func(ctx context.Context) error
}

// Timeout implements river.Worker.
func (w *ViewsWorker) Timeout(*river.Job[ViewsArgs]) time.Duration { return fleetTimeout }

// Work implements river.Worker.
func (w *ViewsWorker) Work(ctx context.Context, _ *river.Job[ViewsArgs]) error { return w.views(ctx) }

// dueJobs are the jobs of the accounts not paused that are due now, each
// sync in its lane (syncLane).
func (w *DueWorker) dueJobs(ctx context.Context, tx pgx.Tx, accounts []Registered) ([]river.InsertManyParams, error) {
	var names, reconciled []string
	for _, a := range accounts {
		if !a.Paused {
			names = append(names, a.Name)
		}
		if !a.Paused && a.Schedules.Reconcile != nil && a.Schedules.Sync != nil {
			reconciled = append(reconciled, a.Name) // only dueOf's first reconcile reads synced
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	jobs, now, err := w.river.lastJobs(ctx, tx, names, []string{KindSync, KindReconcile, KindSnapshot})
	if err != nil {
		return nil, fmt.Errorf("reading when each account's jobs last ran: %w", err)
	}
	synced, err := w.firstSynced(ctx, tx, reconciled, jobs)
	if err != nil {
		return nil, fmt.Errorf("reading when each account first synced: %w", err)
	}
	var params []river.InsertManyParams
	for _, a := range accounts {
		if !a.Paused {
			params = append(params, w.dueOf(a, jobs, synced, now)...)
		}
	}
	return params, nil
}

// dueOf are the jobs of account a that are due now, each at the ticks of
// its schedule shifted by the account's phase (phaseFor).
func (w *DueWorker) dueOf(a Registered, jobs map[[2]string]lastJob, synced map[string]time.Time, now time.Time) []river.InsertManyParams {
	var params []river.InsertManyParams
	var lastSync *lastJob
	if j, ok := jobs[[2]string{a.Name, KindSync}]; ok {
		lastSync = &j
	}
	sync, syncNow := syncLane(a.Name, lastSync, w.slot)
	for _, j := range []struct {
		s    Schedule
		args river.JobArgs
	}{
		{a.Schedules.Sync, sync},
		{a.Schedules.Reconcile, ReconcileArgs{Account: accountArg(a.Name)}},
		{a.Schedules.Snapshot, SnapshotArgs{Account: accountArg(a.Name)}},
	} {
		if j.s == nil || (j.args.Kind() == KindSnapshot && !a.Snapshots) || (j.args.Kind() == KindSync && !syncNow) {
			continue
		}
		last, ok := jobs[[2]string{a.Name, j.args.Kind()}]
		at := last.created
		if !ok && j.args.Kind() == KindReconcile && a.Schedules.Sync != nil {
			// Its first reconcile: served, as it were, by the
			// first sync; none yet, none due.
			if at, ok = synced[a.Name]; !ok {
				continue
			}
		}
		if ok && !isDueNow(phaseFor(j.s, a.Name), &at, now) {
			continue
		}
		params = append(params, river.InsertManyParams{Args: j.args})
	}
	return params
}

// firstSynced returns when the first sync or backfill kept of each account
// that has no reconcile job kept completed (none did: no entry).
func (w *DueWorker) firstSynced(ctx context.Context, tx pgx.Tx, names []string, last map[[2]string]lastJob) (map[string]time.Time, error) {
	var never []string
	for _, n := range names {
		if _, ok := last[[2]string{n, KindReconcile}]; !ok {
			never = append(never, n)
		}
	}
	out := map[string]time.Time{}
	if len(never) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, w.river.q.firstSynced, never, KindSync, KindBackfill)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var account string
		var at *time.Time
		if err := rows.Scan(&account, &at); err != nil {
			return nil, err
		}
		if at != nil {
			out[account] = *at
		}
	}
	return out, rows.Err()
}
