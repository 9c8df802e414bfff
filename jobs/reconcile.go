package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/usersync/usersync/sync/syncer"
)

// ReconcileWorker runs reconciles: every id checked against the warehouse.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	d *Deps
}

// Timeout implements river.Worker: the job's slice and its grace.
func (w *ReconcileWorker) Timeout(job *river.Job[ReconcileArgs]) time.Duration {
	return w.d.sliceTimeout(job.JobRow)
}

// Work implements river.Worker. A tripped safety valve cancels the job with
// its reason: retrying would trip it again, and an operator must look.
func (w *ReconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	a, err := w.d.start(ctx, job.JobRow, job.Args.Account)
	if err != nil {
		return err
	}
	// Before the account's first sync the warehouse is empty: a reconcile
	// would fetch every user that the first sync, a backfill, fetches anyway.
	if wm, err := a.Store.Runs().Watermark(ctx); err != nil {
		return outcome(err, job.JobRow)
	} else if wm.IsZero() {
		a.Logger.InfoContext(ctx, "no reconcile before the account's first sync: nothing is mirrored yet", "job_id", job.ID)
		return nil
	}
	start := time.Now()
	sctx, unslice := withSlice(ctx, w.d.sliceOf(job.JobRow))
	sum, err := a.Syncer.Reconcile(sctx, syncer.ReconcileRequest{JobID: &job.ID, MaxDeleteShare: a.MaxDeleteShare,
		Membership: a.ReconcileMembership})
	unslice()
	if w.d.ObserveReconcile != nil {
		w.d.ObserveReconcile(a.Name, sum, err, time.Since(start))
	}
	if err != nil {
		var valve *syncer.SafetyValveError
		if errors.As(err, &valve) {
			a.Logger.ErrorContext(ctx, "reconcile stopped by its safety valve; the job is cancelled", "job_id", job.ID, "error", err.Error())
			return river.JobCancel(err)
		}
		w.d.logEnd(ctx, a, job.JobRow, "reconcile", err)
		return w.d.outcome(ctx, err, job.JobRow)
	}
	w.d.afterRun(ctx, a, false, true) // a reconcile may change what it fetched again
	return nil
}
