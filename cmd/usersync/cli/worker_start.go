package cli

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
)

// workerParts is what the worker builds before its database answers: all
// of it is configuration, so a bad setting still exits 2 at once.
type workerParts struct {
	pool        *pgxpool.Pool
	store       *warehouse.Store // the environment's account's
	riverSchema string
	metrics     *jobs.Metrics
	fleet       *fleet.Fleet // every account, the environment's among them
	drain       chan struct{}
}

// newWorkerParts opens the pool (which connects only when used) and builds
// the store, the metrics and the fleet, checks the snapshot settings, and
// gives e the response-memory budget every account's API client shares.
// Close the pool when done.
func newWorkerParts(ctx context.Context, e *env, schedules jobs.Schedules) (*workerParts, error) {
	cfg := e.cfg
	if e.bodies == nil {
		e.bodies = jsonapi.NewBodyBudget(cfg.MaxResponseMemory)
	}
	pool, err := newPool(ctx, e, int32(cfg.Workers+cfg.SlowWorkers+cfg.LongWorkers+cfg.SnapshotWorkers)+7)
	if err != nil {
		return nil, err
	}
	w := &workerParts{pool: pool, riverSchema: jobs.RiverSchema(cfg.Schema), drain: make(chan struct{})}
	if w.store, err = warehouse.NewStore(pool, cfg.Schema); err != nil {
		pool.Close()
		return nil, usageError{err}
	}
	registered := func(ctx context.Context, tx pgx.Tx) ([]jobs.Registered, error) { return w.fleet.Registered(ctx, tx) }
	w.metrics = jobs.NewMetrics(jobs.MetricsConfig{Pool: pool, Store: w.store, Schema: cfg.Schema, RiverSchema: w.riverSchema,
		Snapshots: cfg.SnapshotDir != "off", Accounts: registered, Logger: e.logger})
	if w.fleet, err = newFleet(e, pool, w.metrics, schedules); err != nil {
		pool.Close()
		return nil, err
	}
	if cfg.SnapshotDir != "off" {
		// An account's writer is made at its first job; a bad setting of
		// the environment's is still an error at start.
		if _, err := newSnapshotWriter(e, pool, cfg.SnapshotDir); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return w, nil
}

// start builds what needs the database (the API client reads a stored OAuth
// token from it) and River's client, mounts the job UI and starts River:
// from then on the worker works and /readyz checks the database. It returns
// the environment's account's API client, for the checks at start.
func (w *workerParts) start(ctx context.Context, e *env, handler *jobs.HTTPHandler) (*river.Client[pgx.Tx], *jsonapi.Client, error) {
	cfg := e.cfg
	api, err := w.fleet.OpenEnv(ctx)
	if err != nil {
		return nil, nil, err
	}
	rc, err := w.fleet.Client(fleet.Worker{Workers: cfg.Workers, SlowWorkers: cfg.SlowWorkers, LongWorkers: cfg.LongWorkers,
		SnapshotWorkers: cfg.SnapshotWorkers, JobTimeout: cfg.JobTimeout, TimeSlice: cfg.TimeSlice, SlotTime: cfg.SlotTime, SoftStop: cfg.ShutdownTimeout,
		Drain: w.drain, Remedy: func(ctx context.Context, account string) string { return remedyOf(ctx, e, account) },
		Logger: e.logger, RiverLogger: quietLogger(e)})
	if err != nil {
		return nil, nil, err
	}
	if handler != nil {
		if err := handler.StartJobUI(ctx, rc); err != nil {
			return nil, nil, err
		}
	}
	if err := rc.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("starting the job queue: %w", err)
	}
	return rc, api, nil
}

// startChecked starts the worker (start, on runCtx) and then runs usersync
// check's checks it has not done, logging the first that fails; ctx, the
// worker's, cuts them short when it stops.
func (w *workerParts) startChecked(ctx, runCtx context.Context, e *env, handler *jobs.HTTPHandler) (*river.Client[pgx.Tx], error) {
	rc, api, err := w.start(runCtx, e, handler)
	if err != nil {
		return nil, err
	}
	logStartChecks(ctx, e, w.store, api)
	return rc, nil
}
