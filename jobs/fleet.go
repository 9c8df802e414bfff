package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// dueKept is how long the fleet's finished jobs (its ticks and remakes of
// the views) are kept: long enough to read a failing one's error in the
// job UI, short enough that one every few seconds does not pile up for the
// retention of the other jobs.
const dueKept = time.Hour

// DueWorker is the fleet's tick. River's periodic jobs are fixed when a
// worker starts, so the registered accounts, which come and go without a
// restart, are scheduled by this one periodic job instead: at each tick it
// reads the registry and inserts, in one batch, for every account not
// paused, each job whose schedule has a tick that no job of the account
// served yet (isDueNow, by the database's clock). The jobs are unique per
// account and kind while one is active, so ticks on several replicas, or a
// tick while the last job still runs, add nothing. The environment's
// account is listed and scheduled as the registered ones; a paused or
// removed account gets no job from the next tick on.
//
// Its reads do not grow with the jobs kept: the last job of each account
// and kind is one probe of usersync's index on River's jobs
// (createAccountIndex).
//
// An account's first reconcile is not due at once, as its first sync is: a
// reconcile on an empty warehouse walks the whole account for nothing. It
// waits for the account's first completed sync (or backfill), which has
// seen every user, and is then due at its schedule's first tick after it.
type DueWorker struct {
	river.WorkerDefaults[DueArgs]
	list   ListAccounts
	river  *riverDB
	slot   time.Duration // the normal lane's slot time (Deps.SlotTime), which routes syncs
	logger *slog.Logger
}

// Work implements river.Worker.
func (w *DueWorker) Work(ctx context.Context, job *river.Job[DueArgs]) error {
	accounts, err := w.list(ctx)
	if err != nil {
		// River logs the failed tick; the next tick tries again.
		return fmt.Errorf("listing the accounts: %w", err)
	}
	params, err := w.dueJobs(ctx, accounts)
	if err != nil {
		return err
	}
	if len(params) > 0 {
		client := river.ClientFromContext[pgx.Tx](ctx)
		if _, err := client.InsertMany(ctx, params); err != nil {
			return fmt.Errorf("inserting the accounts' %d due jobs: %w", len(params), err)
		}
	}
	if _, err := w.river.pool.Exec(ctx, w.river.q.pruneDue, dueKept.Seconds()); err != nil {
		w.logger.WarnContext(ctx, "could not delete the fleet's old jobs", "error", err.Error())
	}
	return nil
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

// Work implements river.Worker.
func (w *ViewsWorker) Work(ctx context.Context, _ *river.Job[ViewsArgs]) error { return w.views(ctx) }

// dueJobs are the jobs of the accounts not paused that are due now, each
// sync in its lane (syncLane).
func (w *DueWorker) dueJobs(ctx context.Context, accounts []Registered) ([]river.InsertManyParams, error) {
	var names []string
	for _, a := range accounts {
		if !a.Paused {
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	jobs, now, err := w.river.lastJobs(ctx, names, []string{KindSync, KindReconcile, KindSnapshot})
	if err != nil {
		return nil, fmt.Errorf("reading when each account's jobs last ran: %w", err)
	}
	synced, err := w.firstSynced(ctx, names, jobs)
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

// dueOf are the jobs of account a that are due now.
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
		if ok && !isDueNow(j.s, &at, now) {
			continue
		}
		params = append(params, river.InsertManyParams{Args: j.args})
	}
	return params
}

// firstSynced returns when the first sync or backfill kept of each account
// that has no reconcile job kept completed (none did: no entry).
func (w *DueWorker) firstSynced(ctx context.Context, names []string, last map[[2]string]lastJob) (map[string]time.Time, error) {
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
	rows, err := w.river.pool.Query(ctx, w.river.q.firstSynced, never, KindSync, KindBackfill)
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
