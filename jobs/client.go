package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// Schedules are the periodic jobs: a nil Schedule is off.
type Schedules struct {
	Sync      Schedule
	Reconcile Schedule
	Snapshot  Schedule
}

// ClientConfig configures the worker's River client.
type ClientConfig struct {
	Pool        *pgxpool.Pool
	RiverSchema string
	Deps        *Deps
	// Accounts lists the accounts, the environment's among them, whose
	// schedules the fleet's tick (DueWorker) turns into jobs every
	// FleetTick; nil: no tick.
	Accounts  ListAccounts
	FleetTick time.Duration
	// Views, when set, remakes the union views if the accounts changed:
	// a job of its own (ViewsWorker) every ViewsEvery while an account is
	// registered, never a step of the tick, which a remake over hundreds
	// of accounts would hold for seconds.
	Views      func(ctx context.Context) error
	ViewsEvery time.Duration
	// MaxWorkers is how many incremental syncs (QueueSync) run at once in
	// this process, LongWorkers how many backfills and reconciles
	// (QueueLong), SnapshotWorkers how many snapshots (QueueSnapshot): each
	// queue has its own slots, so that no kind of work holds back another.
	MaxWorkers      int
	LongWorkers     int
	SnapshotWorkers int
	// SlowWorkers is how many syncs of the slow lane (QueueSlow) run at
	// once: those that outlasted Deps.SlotTime in the normal lane.
	SlowWorkers int
	// SoftStop is how long a stopping worker lets running jobs finish
	// before cancelling them.
	SoftStop time.Duration
	Logger   *slog.Logger
}

// NewClient returns the worker's River client: every job kind registered
// (every replica registers the same kinds, so whichever is leader can run
// every schedule), the fleet's tick that schedules every account, unique so that N
// replicas and restarts never duplicate one, a queue of its own for each
// kind of work, and the rescue of stuck jobs set just above each kind's
// timeout, which no live job outlasts (slice.go).
// Within a queue River runs jobs by priority (a job that waited for its
// account's lock first, lockwait.go), then the time they became due, then
// insertion: oldest due first, whatever the account.
func NewClient(cfg ClientConfig) (*river.Client[pgx.Tx], error) {
	rdb, err := newRiverDB(cfg.Pool, cfg.RiverSchema)
	if err != nil {
		return nil, err
	}
	cfg.Deps.pool = cfg.Pool
	workers := river.NewWorkers()
	river.AddWorker(workers, &SyncWorker{d: cfg.Deps})
	river.AddWorker(workers, &BackfillWorker{d: cfg.Deps})
	river.AddWorker(workers, &SnapshotWorker{d: cfg.Deps})
	river.AddWorker(workers, &ReconcileWorker{d: cfg.Deps})
	list := cfg.Accounts
	if list == nil {
		list = func(context.Context, pgx.Tx) ([]Registered, error) { return nil, nil }
	}
	river.AddWorker(workers, &DueWorker{list: list, river: rdb, slot: cfg.Deps.SlotTime, logger: cfg.Deps.Logger})
	if cfg.Views != nil { // without it no views job is inserted either (fleetPeriodic)
		river.AddWorker(workers, &ViewsWorker{views: cfg.Views})
	}
	periodic := fleetPeriodic(cfg)
	accounts := newJobAccounts()
	rcfg := &river.Config{
		Schema:       cfg.RiverSchema,
		Workers:      workers,
		PeriodicJobs: periodic,
		// River's own lines about a job name its account (workers_log.go).
		Middleware: []rivertype.Middleware{&accountMiddleware{jobs: accounts}},
		Queues: map[string]river.QueueConfig{
			QueueSync:     {MaxWorkers: max(cfg.MaxWorkers, 1)},
			QueueSlow:     {MaxWorkers: max(cfg.SlowWorkers, 1)},
			QueueLong:     {MaxWorkers: max(cfg.LongWorkers, 1)},
			QueueSnapshot: {MaxWorkers: max(cfg.SnapshotWorkers, 1)},
			QueueFleet:    {MaxWorkers: 2}, // the tick and the views' remake: one slot each (fleetOpts)
		},
		// Inserts wake the queues through LISTEN/NOTIFY, but a job snoozed
		// for less than River's scheduler interval (a time slice's end, a
		// short lock wait) becomes available unannounced: the poll finds it.
		FetchPollInterval: 5 * time.Second,
		SoftStopTimeout:   cfg.SoftStop,
		MaxAttempts:       MaxAttempts,
		Logger:            riverLogger(cfg.Logger, accounts),
		JobTimeout:        -1,
		// due reads when each periodic job last ran from the jobs kept:
		// keep them longer than the longest period worth catching up.
		CompletedJobRetentionPeriod: jobRetention,
		CancelledJobRetentionPeriod: jobRetention,
		DiscardedJobRetentionPeriod: jobRetention,
	}
	// Every kind has a timeout of its own (a slice and its grace, a
	// snapshot's, the fleet's), and no live job runs past it: the rescuer
	// only ever makes a dead worker's job run again (slice.go).
	rcfg.RescueStuckJobsAfter = rescueAfter(cfg.Deps.timeSlice())
	c, err := river.NewClient(riverpgxv5.New(cfg.Pool), rcfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the job queue: %w", err)
	}
	return c, nil
}

// fleetPeriodic returns the fleet's own periodic jobs: the tick, and the
// remake of the union views while an account is registered. The tick
// reads nothing to be inserted: the environment's account, never paused,
// is always listed, and the tick itself inserts nothing when no account
// is due.
func fleetPeriodic(cfg ClientConfig) []*river.PeriodicJob {
	var periodic []*river.PeriodicJob
	if cfg.Accounts != nil && cfg.FleetTick > 0 {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(cfg.FleetTick), func() (river.JobArgs, *river.InsertOpts) {
			return DueArgs{}, nil
		}, &river.PeriodicJobOpts{ID: KindDue, RunOnStart: true}))
	}
	if cfg.Accounts != nil && cfg.Views != nil && cfg.ViewsEvery > 0 {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(cfg.ViewsEvery), func() (river.JobArgs, *river.InsertOpts) {
			if !anyRegistered(cfg.Accounts, cfg.Deps.Logger) {
				return nil, nil // accounts remove remakes the views of the last one
			}
			return ViewsArgs{}, nil
		}, &river.PeriodicJobOpts{ID: KindViews}))
	}
	return periodic
}

// NewInsertClient returns a River client that only inserts and reads jobs
// (for `usersync backfill`): it runs no workers, elects no leader, and needs
// no worker in the same process.
func NewInsertClient(pool *pgxpool.Pool, riverSchema string, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: riverSchema, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("configuring the job queue: %w", err)
	}
	return c, nil
}

// anyRegistered says whether an account is registered (in the registry,
// not the environment's): only then is the remake of the views inserted.
// When the accounts cannot be read it is true: the job is inserted and its
// failure says why.
func anyRegistered(list ListAccounts, logger *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	accounts, err := list(ctx, nil)
	if err != nil {
		logger.DebugContext(ctx, "the fleet could not read the accounts", "error", err.Error())
		return true
	}
	return slices.ContainsFunc(accounts, func(a Registered) bool { return !a.Env })
}
