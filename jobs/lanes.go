package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// The lanes of incremental syncs. A sync in the normal lane (QueueSync) has
// a slot time (Deps.SlotTime): still running after it, its run is cancelled
// with ErrYielded as the cause, in-flight request and all (pages committed
// stay; the run is recorded interrupted), and its worker inserts the
// account's sync in the slow lane (QueueSlow, slots of its own), which
// resumes the run from its checkpoint with no slot time, then completes
// its own job. So a slow account holds a slot of the normal lane for at
// most the slot time, as a rate limit's wait holds none (outcome.go).

// ErrYielded is the cause of a run that yielded its slot of the normal lane
// after the slot time: an interruption (the next run resumes it), never a
// failure.
var ErrYielded = fmt.Errorf("%w: yielded its slot", syncer.ErrInterrupted)

// yieldCause is ErrYielded after slot, as the run's error says it.
func yieldCause(slot time.Duration) error {
	return fmt.Errorf("%w after %s; continues in the slow lane", ErrYielded, slot)
}

// withSlot returns ctx cancelled with yieldCause once slot has passed (slot
// 0: never), and the func that releases its timer.
func withSlot(ctx context.Context, slot time.Duration) (context.Context, func()) {
	if slot <= 0 {
		return ctx, func() {}
	}
	sctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(slot, func() { cancel(yieldCause(slot)) })
	return sctx, func() { t.Stop(); cancel(nil) }
}

// yield moves a's run that yielded its slot (err) to the slow lane: it
// inserts the account's slow-lane sync (unique while one is active, so a
// second yield adds none) and completes job. When the insert fails, the
// job snoozes as an interrupted run does and runs again in its lane.
func (d *Deps) yield(ctx context.Context, a *Account, job *rivertype.JobRow, slot time.Duration, err error) error {
	client, cerr := river.ClientFromContextSafely[pgx.Tx](ctx)
	if cerr == nil {
		_, cerr = client.Insert(ctx, SyncArgs{Account: accountArg(a.Name), Slow: true}, nil)
	}
	if cerr != nil {
		a.Logger.WarnContext(ctx, "the run yielded its slot but could not move to the slow lane; its job runs again and resumes it",
			"job_id", job.ID, "error", cerr.Error())
		return outcome(err, job)
	}
	if d.ObserveYield != nil {
		d.ObserveYield(a.Name)
	}
	a.Logger.InfoContext(ctx, "run yielded its slot; it continues in the slow lane", "job_id", job.ID, "slot_time", slot.String())
	return nil
}

// lastJob is the last job of an account and kind, as lastCreatedOf reads
// it.
type lastJob struct {
	created time.Time
	slow    bool // a sync of the slow lane
	active  bool // not completed, cancelled nor discarded
	// took is how long its last attempt ran, when it completed; -1 when it
	// did not.
	took time.Duration
}

// syncLane routes an account's next sync by its last sync job (nil: none
// kept), for a normal lane whose slot time is slot. While a slow-lane sync
// is active, none: it runs or waits for the account's lock, and a normal
// one would only snooze behind it. After a slow-lane sync that ran the slot
// time or longer, the slow lane again: the account is still slow, and a
// normal sync would take a slot for the slot time only to yield. Otherwise
// (no slot time, a quick slow-lane run, a failed one) the normal lane.
func syncLane(account string, last *lastJob, slot time.Duration) (args SyncArgs, ok bool) {
	args = SyncArgs{Account: accountArg(account)}
	if last == nil || !last.slow {
		return args, true
	}
	if last.active {
		return args, false
	}
	args.Slow = slot > 0 && last.took >= slot
	return args, true
}

// lastJobs reads the last job of each of the accounts and kinds, and the
// database's now.
func (r *riverDB) lastJobs(ctx context.Context, db warehouse.DBTX, names, kinds []string) (map[[2]string]lastJob, time.Time, error) {
	rows, err := db.Query(ctx, r.q.lastCreatedOf, names, kinds)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rows.Close()
	last := map[[2]string]lastJob{}
	var now time.Time
	for rows.Next() {
		var account, kind string
		var at *time.Time
		var took *float64
		var j lastJob
		if err := rows.Scan(&account, &kind, &at, &j.slow, &j.active, &took, &now); err != nil {
			return nil, now, err
		}
		if at == nil {
			continue
		}
		j.created, j.took = *at, -1
		if took != nil {
			j.took = time.Duration(*took * float64(time.Second))
		}
		last[[2]string{account, kind}] = j
	}
	return last, now, rows.Err()
}
