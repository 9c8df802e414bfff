package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// dueKept is how long the fleet's finished ticks are kept: long enough to
// read a failing tick's error in the job UI, short enough that one a few
// seconds does not pile up for the retention of the other jobs.
const dueKept = time.Hour

// DueWorker is the fleet's tick. River's periodic jobs are fixed when a
// worker starts, so the registered accounts, which come and go without a
// restart, are scheduled by this one periodic job instead: at each tick it
// reads the registry and inserts, for every account not paused, each job
// whose schedule has a tick that no job of the account served yet (the
// decision of due, by the database's clock). The jobs are unique per
// account and kind while one is active, so ticks on several replicas, or a
// tick while the last job still runs, add nothing. The default account
// keeps its periodic jobs (due.go); a paused or removed account gets no job
// from the next tick on.
type DueWorker struct {
	river.WorkerDefaults[DueArgs]
	list   ListAccounts
	river  *riverDB
	logger *slog.Logger
}

// Work implements river.Worker.
func (w *DueWorker) Work(ctx context.Context, job *river.Job[DueArgs]) error {
	accounts, err := w.list(ctx)
	if err != nil {
		// River logs the failed tick; the next tick tries again.
		return fmt.Errorf("listing the accounts: %w", err)
	}
	last, now, err := w.lastCreated(ctx)
	if err != nil {
		return fmt.Errorf("reading when each account's jobs last ran: %w", err)
	}
	client := river.ClientFromContext[pgx.Tx](ctx)
	for _, a := range accounts {
		if a.Paused {
			continue
		}
		for _, j := range []struct {
			s    Schedule
			args river.JobArgs
		}{
			{a.Schedules.Sync, SyncArgs{Account: a.Name}},
			{a.Schedules.Reconcile, ReconcileArgs{Account: a.Name}},
			{a.Schedules.Snapshot, SnapshotArgs{Account: a.Name}},
		} {
			if j.s == nil || (j.args.Kind() == KindSnapshot && !a.Snapshots) {
				continue
			}
			if at, ok := last[[2]string{a.Name, j.args.Kind()}]; ok && !isDueNow(j.s, &at, now) {
				continue
			}
			if _, err := client.Insert(ctx, j.args, nil); err != nil {
				return fmt.Errorf("inserting the %s job of account %s: %w", j.args.Kind(), a.Name, err)
			}
		}
	}
	if _, err := w.river.pool.Exec(ctx, w.river.q.pruneDue, dueKept.Seconds()); err != nil {
		w.logger.WarnContext(ctx, "could not delete the fleet's old ticks", "error", err.Error())
	}
	return nil
}

// lastCreated returns when the last job of each account and kind was
// created, and the database's now.
func (w *DueWorker) lastCreated(ctx context.Context) (map[[2]string]time.Time, time.Time, error) {
	rows, err := w.river.pool.Query(ctx, w.river.q.lastCreatedByAccount, []string{KindSync, KindReconcile, KindSnapshot})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading when each account's jobs last ran: %w", err)
	}
	defer rows.Close()
	last := map[[2]string]time.Time{}
	var now time.Time
	for rows.Next() {
		var account, kind *string
		var at *time.Time
		if err := rows.Scan(&account, &kind, &at, &now); err != nil {
			return nil, now, fmt.Errorf("reading when each account's jobs last ran: %w", err)
		}
		if account != nil && kind != nil && at != nil {
			last[[2]string{*account, *kind}] = *at
		}
	}
	if err := rows.Err(); err != nil {
		return nil, now, fmt.Errorf("reading when each account's jobs last ran: %w", err)
	}
	return last, now, nil
}
