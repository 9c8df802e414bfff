package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/warehouse"
)

// Priorities. River fetches a queue's jobs by priority, then by when they
// became due: a job that snoozed while its account's sync lock was held
// would come back behind every job that came due during its wait. So a
// lock waiter continues as a job of priorityWaiter, and every other job is
// inserted at priorityNormal: when the lock frees, the waiter runs before
// the jobs that came due after it (and, being one per account and kind,
// holds back no one for long).
const (
	priorityWaiter = 1
	priorityNormal = 2
)

// lockWaitOutput is the output of a job that found its account's sync lock
// held and continued as a new job of priorityWaiter.
type lockWaitOutput struct {
	LockWait bool `json:"lock_wait"`
}

// lockWaitsOf is how many times job and the jobs it continues found the lock
// held (its metadata's lock_waits), which sets its wait (lockedSnoozeAfter).
func lockWaitsOf(job *rivertype.JobRow) int64 {
	var m struct {
		LockWaits int64 `json:"lock_waits"`
	}
	if job == nil || json.Unmarshal(job.Metadata, &m) != nil {
		return 0
	}
	return m.LockWaits
}

// outcome is the package's outcome, except that a job which found its
// account's sync lock held continues as a waiter (waitForLock); when that
// cannot be done it snoozes, as outcome says.
func (d *Deps) outcome(ctx context.Context, err error, job *rivertype.JobRow) error {
	if !errors.Is(err, warehouse.ErrLocked) {
		return outcome(err, job)
	}
	client, cerr := river.ClientFromContextSafely[pgx.Tx](ctx)
	if cerr != nil || d.pool == nil {
		return outcome(err, job) // not run by a River client (tests calling Work directly)
	}
	if werr := waitForLock(ctx, client, d, job); werr != nil {
		_ = river.RecordOutput(ctx, nil) // the job snoozes: it did not complete as a waiter
		d.Logger.WarnContext(ctx, "could not requeue the job waiting for its account's lock ahead of later jobs; it snoozes",
			"job_id", job.ID, "error", werr.Error())
		return outcome(err, job)
	}
	return nil
}

// waitForLock completes job and inserts, in the same transaction, the same
// job at priorityWaiter, scheduled after its wait: River can neither change
// a job's priority nor keep a snoozed job's place.
func waitForLock(ctx context.Context, client *river.Client[pgx.Tx], d *Deps, job *rivertype.JobRow) error {
	args, err := continuedArgs(job)
	if err != nil {
		return err
	}
	waits := lockWaitsOf(job)
	meta, err := json.Marshal(map[string]int64{"lock_waits": waits + 1})
	if err != nil {
		return err
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("beginning: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// A job's output is set when it completes; its continuation's id is
	// not known before: the output says it waited, the new job names it.
	if err := river.RecordOutput(ctx, lockWaitOutput{LockWait: true}); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, &river.Job[SyncArgs]{JobRow: job}); err != nil {
		return fmt.Errorf("completing the waiting job: %w", err)
	}
	res, err := client.InsertTx(ctx, tx, args, &river.InsertOpts{Priority: priorityWaiter, Queue: job.Queue,
		ScheduledAt: time.Now().Add(lockedSnoozeAfter(waits)), Metadata: meta})
	if err != nil {
		return fmt.Errorf("inserting its continuation: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	d.Logger.DebugContext(ctx, "the job waiting for its account's lock continues as a waiter", "job_id", job.ID,
		"continued_as", res.Job.ID)
	return nil
}

// continuedArgs are job's arguments, to insert again.
func continuedArgs(job *rivertype.JobRow) (river.JobArgs, error) {
	var args river.JobArgs
	switch job.Kind {
	case KindSync:
		args = &SyncArgs{}
	case KindBackfill:
		args = &BackfillArgs{}
	case KindReconcile:
		args = &ReconcileArgs{}
	default:
		return nil, fmt.Errorf("a %s job does not wait for the lock", job.Kind)
	}
	if err := json.Unmarshal(job.EncodedArgs, args); err != nil {
		return nil, fmt.Errorf("reading the job's arguments: %w", err)
	}
	return deref(args), nil
}

// deref is the value of a pointer to job arguments, whose InsertOpts (a
// value method) then give the job's queue and uniqueness.
func deref(args river.JobArgs) river.JobArgs {
	switch a := args.(type) {
	case *SyncArgs:
		return *a
	case *BackfillArgs:
		return *a
	case *ReconcileArgs:
		return *a
	}
	return args
}
