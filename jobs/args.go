package jobs

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Job kinds. They are stored in River's tables and must never change
// (TestJobsStoredFormIsStable pins them and the arguments' JSON).
const (
	KindSync      = "usersync_sync"
	KindBackfill  = "usersync_backfill"
	KindReconcile = "usersync_reconcile"
	KindSnapshot  = "usersync_snapshot"
	// KindDue turns the registered accounts' schedules into jobs (fleet.go).
	KindDue = "usersync_due"
	// KindViews remakes the union views when the accounts changed
	// (fleet.go).
	KindViews = "usersync_views"
)

// The queues, each with its own bound of workers (ClientConfig), so that
// one kind of work never holds back another: a large account's backfill or
// reconcile takes a slot of QueueLong, never one of the incremental syncs.
// Incremental syncs keep River's default queue, where jobs queued by
// earlier releases (of every kind) wait: it is always served. An
// incremental sync still running after its slot time continues in
// QueueSlow, the slow lane (lanes.go).
const (
	QueueSync     = river.QueueDefault
	QueueSlow     = "usersync_slow"
	QueueLong     = "usersync_long"
	QueueSnapshot = "usersync_snapshot"
	QueueFleet    = "usersync_fleet"
)

// MaxAttempts bounds the attempts of every usersync job. With River's
// default backoff (attempt⁴ seconds) ten attempts span about seven hours.
const MaxAttempts = 10

// activeStates are the states in which a job blocks a duplicate: every
// state but completed (River's default includes completed, which would
// block a periodic job until the cleaner runs).
var activeStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// uniqueOpts makes a job unique by its arguments (so per account and kind)
// while one is active, in queue, at the normal priority (lockwait.go).
func uniqueOpts(queue string) river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, Queue: queue, Priority: priorityNormal,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// SyncArgs is an incremental sync: users updated since the watermark minus
// the lookback, after the dimension lists.
type SyncArgs struct {
	// Account is the account's name; empty for the default account, so
	// that the stored form of its jobs is that of earlier releases.
	Account string `json:"account,omitempty"`
	// Slow puts the job in the slow lane (QueueSlow), where its run has
	// no slot time; omitted when false, so that a normal job's stored form
	// is that of earlier releases.
	Slow bool `json:"slow,omitempty"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return KindSync }

// InsertOpts makes sync jobs unique per account and lane while one is
// active, in the lane's queue.
func (a SyncArgs) InsertOpts() river.InsertOpts {
	if a.Slow {
		return uniqueOpts(QueueSlow)
	}
	return uniqueOpts(QueueSync)
}

// BackfillArgs is an on-demand backfill: every user (Full), or those
// updated within [Since, Until].
type BackfillArgs struct {
	Since   *time.Time `json:"since,omitempty"`
	Until   *time.Time `json:"until,omitempty"`
	Full    bool       `json:"full,omitempty"`
	Account string     `json:"account,omitempty"` // as SyncArgs.Account
}

// Kind implements river.JobArgs.
func (BackfillArgs) Kind() string { return KindBackfill }

// InsertOpts makes a backfill of the same range and account unique while
// one is active.
func (BackfillArgs) InsertOpts() river.InsertOpts { return uniqueOpts(QueueLong) }

// ReconcileArgs is a reconcile: every id checked against the warehouse.
type ReconcileArgs struct {
	Account string `json:"account,omitempty"` // as SyncArgs.Account
}

// Kind implements river.JobArgs.
func (ReconcileArgs) Kind() string { return KindReconcile }

// InsertOpts makes reconcile jobs unique per account while one is active.
func (ReconcileArgs) InsertOpts() river.InsertOpts { return uniqueOpts(QueueLong) }

// SnapshotArgs writes a Parquet snapshot of the warehouse.
type SnapshotArgs struct {
	Account string `json:"account,omitempty"` // as SyncArgs.Account
}

// Kind implements river.JobArgs.
func (SnapshotArgs) Kind() string { return KindSnapshot }

// InsertOpts makes snapshot jobs unique per account while one is active.
func (SnapshotArgs) InsertOpts() river.InsertOpts { return uniqueOpts(QueueSnapshot) }

// DueArgs is the fleet's tick: it inserts the registered accounts' jobs
// that are due (DueWorker).
type DueArgs struct{}

// Kind implements river.JobArgs.
func (DueArgs) Kind() string { return KindDue }

// InsertOpts makes the tick unique while one is active: ticks that pile up
// behind a slow one add nothing.
func (DueArgs) InsertOpts() river.InsertOpts { return fleetOpts() }

// ViewsArgs remakes the fleet's union views when the registered accounts
// changed since they were made (ViewsWorker).
type ViewsArgs struct{}

// Kind implements river.JobArgs.
func (ViewsArgs) Kind() string { return KindViews }

// InsertOpts makes the remake unique while one is active.
func (ViewsArgs) InsertOpts() river.InsertOpts { return fleetOpts() }

// fleetOpts are the options of the fleet's own jobs: unique while one is
// active, so that with QueueFleet's two slots the tick and the remake of
// the views never wait for each other, and never retried, as the next
// period's job decides again.
func fleetOpts() river.InsertOpts {
	o := uniqueOpts(QueueFleet)
	o.MaxAttempts = 1
	return o
}
