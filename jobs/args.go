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

func uniqueOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// SyncArgs is an incremental sync: users updated since the watermark minus
// the lookback, after the dimension lists.
type SyncArgs struct {
	Account string `json:"account,omitempty"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return KindSync }

// InsertOpts makes sync jobs unique while one is active.
func (SyncArgs) InsertOpts() river.InsertOpts { return uniqueOpts() }

// BackfillArgs is an on-demand backfill: every user (Full), or those
// updated within [Since, Until].
type BackfillArgs struct {
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	Full  bool       `json:"full,omitempty"`
	// Account is the account the job is for; "" is the default
	// account, so the stored form of the jobs before #41 is unchanged.
	Account string `json:"account,omitempty"`
}

// Kind implements river.JobArgs.
func (BackfillArgs) Kind() string { return KindBackfill }

// InsertOpts makes a backfill of the same range unique while one is active.
func (BackfillArgs) InsertOpts() river.InsertOpts { return uniqueOpts() }

// ReconcileArgs is a reconcile: every id checked against the warehouse.
type ReconcileArgs struct {
	Account string `json:"account,omitempty"`
}

// Kind implements river.JobArgs.
func (ReconcileArgs) Kind() string { return KindReconcile }

// InsertOpts makes reconcile jobs unique while one is active.
func (ReconcileArgs) InsertOpts() river.InsertOpts { return uniqueOpts() }

// SnapshotArgs writes a Parquet snapshot of the warehouse.
type SnapshotArgs struct {
	Account string `json:"account,omitempty"`
}

// Kind implements river.JobArgs.
func (SnapshotArgs) Kind() string { return KindSnapshot }

// InsertOpts makes snapshot jobs unique while one is active.
func (SnapshotArgs) InsertOpts() river.InsertOpts { return uniqueOpts() }
