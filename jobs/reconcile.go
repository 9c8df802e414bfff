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

// Timeout implements river.Worker.
func (w *ReconcileWorker) Timeout(*river.Job[ReconcileArgs]) time.Duration { return w.d.timeout() }

// Work implements river.Worker. A tripped safety valve cancels the job with
// its reason: retrying would trip it again, and an operator must look.
func (w *ReconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	if err := w.d.stopping(ctx, job.JobRow); err != nil {
		return err
	}
	start := time.Now()
	sum, err := w.d.Syncer.Reconcile(ctx, syncer.ReconcileRequest{JobID: &job.ID, MaxDeleteShare: w.d.MaxDeleteShare,
		Membership: w.d.ReconcileMembership})
	if w.d.ObserveReconcile != nil {
		w.d.ObserveReconcile(sum, err, time.Since(start))
	}
	if err != nil {
		var valve *syncer.SafetyValveError
		if errors.As(err, &valve) {
			w.d.Logger.ErrorContext(ctx, "reconcile stopped by its safety valve; the job is cancelled", "job_id", job.ID, "error", err.Error())
			return river.JobCancel(err)
		}
		w.d.logEnd(ctx, job.JobRow, "reconcile", err)
		return outcome(err)
	}
	w.d.afterRun(ctx)
	return nil
}
