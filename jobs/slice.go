package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/syncer"
)

// Time slices. Every sync, backfill and reconcile runs for at most a slice
// (Deps.TimeSlice): still going at its end, the run is interrupted as a
// stopping worker interrupts it (pages committed stay, the run is recorded
// interrupted) and its job snoozes to resume at once from its checkpoint,
// behind the jobs that came due meanwhile. So no live job is ever running
// for longer than its slice and a grace, and River's own stuck-job rescuer,
// set just above that (rescueAfter), only ever takes a dead worker's job
// (kill -9, OOM, a lost host) and makes it run again: usersync writes no
// row of River's table itself. A slice must outlast what a run repeats on
// resuming: a sync's dimension pass (seconds), a reconcile's dimension and
// membership passes (hence its growing slice).
const (
	// DefaultTimeSlice is the slice when Deps.TimeSlice is not set.
	DefaultTimeSlice = time.Minute
	// sliceGraceMax bounds the grace after a slice in which an interrupted
	// run records its end; River's own timeout backs it (Worker.Timeout).
	sliceGraceMax = 30 * time.Second
	// reconcileSlicesMax bounds how many times a reconcile's slice doubles:
	// a reconcile resumes its id walk and the fetches by id it did, but
	// repeats its dimension and membership passes in each slice, so a slice
	// shorter than those passes must grow for it to finish.
	reconcileSlicesMax = 3
	// fleetTimeout bounds the fleet's own jobs (the tick, the remake of the
	// views), so that a dead worker's is rescued (discarded: they are not
	// retried) and the next period's job can be inserted.
	fleetTimeout = time.Minute
)

// ErrSliced is the cause of a run its time slice ended: an interruption
// (its job resumes it at once), never a failure.
var ErrSliced = fmt.Errorf("%w: its time slice ended", syncer.ErrInterrupted)

// timeSlice is Deps.TimeSlice, or DefaultTimeSlice.
func (d *Deps) timeSlice() time.Duration {
	if d.TimeSlice > 0 {
		return d.TimeSlice
	}
	return DefaultTimeSlice
}

// sliceGrace is the grace after slice: half of it, at most sliceGraceMax.
func sliceGrace(slice time.Duration) time.Duration { return min(slice/2, sliceGraceMax) }

// sliceOf is the slice of job: the worker's, doubled for a reconcile at
// each of its snoozes, up to reconcileSlicesMax times.
func (d *Deps) sliceOf(job *rivertype.JobRow) time.Duration {
	s := d.timeSlice()
	if job != nil && job.Kind == KindReconcile {
		s <<= min(snoozes(job), reconcileSlicesMax)
	}
	return s
}

// sliceTimeout is River's timeout of job (Worker.Timeout): its slice and
// the grace. River's rescuer leaves a running job alone until then.
func (d *Deps) sliceTimeout(job *rivertype.JobRow) time.Duration {
	s := d.sliceOf(job)
	return s + sliceGrace(s)
}

// rescueAfter is River's RescueStuckJobsAfter for a worker whose slice is
// slice: the shortest timeout of a sliced job. The rescuer considers jobs
// running longer than it and still leaves each until its own kind's
// timeout (a reconcile's longer slice, a snapshot's USERSYNC_JOB_TIMEOUT).
func rescueAfter(slice time.Duration) time.Duration {
	return min(slice+sliceGrace(slice), fleetTimeout)
}

// withSlice returns ctx cancelled with ErrSliced once slice has passed,
// and the func that releases its timer.
func withSlice(ctx context.Context, slice time.Duration) (context.Context, func()) {
	sctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(slice, func() { cancel(fmt.Errorf("%w after %s; its job resumes it at once", ErrSliced, slice)) })
	return sctx, func() { t.Stop(); cancel(nil) }
}
