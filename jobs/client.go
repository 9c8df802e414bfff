package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
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
	Schedules   Schedules
	// MaxWorkers is how many jobs run at once in this process. Runs share
	// the sync lock, so more than two rarely helps.
	MaxWorkers int
	// SoftStop is how long a stopping worker lets running jobs finish
	// before cancelling them.
	SoftStop time.Duration
	Logger   *slog.Logger
}

// NewClient returns the worker's River client: every job kind registered
// (every replica registers the same kinds, so whichever is leader can run
// every schedule), the periodic jobs from the schedules, unique so that N
// replicas and restarts never duplicate one, and the rescue of stuck jobs
// set above the job timeout.
func NewClient(cfg ClientConfig) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &SyncWorker{d: cfg.Deps})
	river.AddWorker(workers, &BackfillWorker{d: cfg.Deps})
	river.AddWorker(workers, &SnapshotWorker{d: cfg.Deps})
	river.AddWorker(workers, &ReconcileWorker{d: cfg.Deps})
	var periodic []*river.PeriodicJob
	add := func(id string, s Schedule, args river.JobArgs) {
		if s == nil {
			return
		}
		d := &due{pool: cfg.Pool, riverSchema: cfg.RiverSchema, kind: args.Kind(), schedule: s, logger: cfg.Deps.Logger}
		periodic = append(periodic, river.NewPeriodicJob(s, func() (river.JobArgs, *river.InsertOpts) {
			if !d.now(time.Now()) {
				return nil, nil // River inserts nothing
			}
			return args, nil
		}, &river.PeriodicJobOpts{ID: id, RunOnStart: true}))
	}
	add(KindSync, cfg.Schedules.Sync, SyncArgs{})
	add(KindReconcile, cfg.Schedules.Reconcile, ReconcileArgs{})
	if cfg.Deps.Snapshot != nil {
		add(KindSnapshot, cfg.Schedules.Snapshot, SnapshotArgs{})
	}
	maxWorkers := max(cfg.MaxWorkers, 1)
	rcfg := &river.Config{
		Schema:          cfg.RiverSchema,
		Workers:         workers,
		PeriodicJobs:    periodic,
		Queues:          map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		SoftStopTimeout: cfg.SoftStop,
		MaxAttempts:     MaxAttempts,
		Logger:          cfg.Logger,
		JobTimeout:      -1,
		// due reads when each periodic job last ran from the jobs kept:
		// keep them longer than the longest period worth catching up.
		CompletedJobRetentionPeriod: jobRetention,
		CancelledJobRetentionPeriod: jobRetention,
		DiscardedJobRetentionPeriod: jobRetention,
	}
	if cfg.Deps.JobTimeout > 0 {
		rcfg.JobTimeout = cfg.Deps.JobTimeout
		rcfg.RescueStuckJobsAfter = cfg.Deps.JobTimeout + time.Hour
	}
	c, err := river.NewClient(riverpgxv5.New(cfg.Pool), rcfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the job queue: %w", err)
	}
	return c, nil
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

// WorkerRunning says whether a worker runs on the job queue in riverSchema:
// every running River client takes part in its leader election, and a leader
// renews its term every few seconds, so a live term means one runs.
func WorkerRunning(ctx context.Context, pool *pgxpool.Pool, riverSchema string) (bool, error) {
	q, err := newStatements(riverSchema)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := pool.QueryRow(ctx, q.workerRunning).Scan(&ok); err != nil {
		return false, fmt.Errorf("reading the job queue's leader: %w", err)
	}
	return ok, nil
}
