package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// The worker's tries to reach its database at start are dbRetryFirst apart,
// doubling up to dbRetryMax: a database back after an outage is found within
// dbRetryMax, sooner than a supervisor's restart backoff (Kubernetes waits up
// to five minutes), and a long outage logs two lines a minute.
const (
	dbRetryFirst = time.Second
	dbRetryMax   = 30 * time.Second
)

// workerParts is what the worker builds before its database answers: all
// of it is configuration, so a bad setting still exits 2 at once.
type workerParts struct {
	schedules   jobs.Schedules
	pool        *pgxpool.Pool
	store       *warehouse.Store
	riverSchema string
	metrics     *jobs.Metrics
	fleet       *fleet // the accounts; its default account is set by start
	snapshot    func(context.Context) (jobs.SnapshotOutcome, error)
	drain       chan struct{}
	api         *jsonapi.Client // built by start
}

// newWorkerParts opens the pool (which connects only when used) and builds
// the store, the metrics, the fleet and the default account's snapshot
// writer, and gives e the response-memory budget every account's API
// client shares. Close the pool when done.
func newWorkerParts(ctx context.Context, e *env, schedules jobs.Schedules) (*workerParts, error) {
	cfg := e.cfg
	if e.bodies == nil {
		e.bodies = jsonapi.NewBodyBudget(cfg.MaxResponseMemory)
	}
	pool, err := newPool(ctx, e, int32(cfg.Workers+cfg.SlowWorkers+cfg.LongWorkers+cfg.SnapshotWorkers)+7)
	if err != nil {
		return nil, err
	}
	w := &workerParts{schedules: schedules, pool: pool, riverSchema: jobs.RiverSchema(cfg.Schema), drain: make(chan struct{})}
	if w.store, err = warehouse.NewStore(pool, cfg.Schema); err != nil {
		pool.Close()
		return nil, usageError{err}
	}
	registered := func(ctx context.Context) ([]jobs.Registered, error) { return w.fleet.Registered(ctx) }
	w.metrics = jobs.NewMetrics(jobs.MetricsConfig{Pool: pool, Store: w.store, Schema: cfg.Schema, RiverSchema: w.riverSchema,
		SnapshotInterval: snapshotInterval(cfg, schedules), SyncInterval: jobs.ScheduleInterval(schedules.Sync, time.Now()), Snapshots: cfg.SnapshotDir != "off", Accounts: registered, Logger: e.logger})
	w.fleet = newFleet(e, pool, w.metrics, nil)
	if cfg.SnapshotDir == "off" {
		return w, nil
	}
	de := defaultEnv(e)
	sw, err := newSnapshotWriter(de, pool, cfg.SnapshotDir)
	if err != nil {
		pool.Close()
		return nil, err
	}
	w.snapshot = func(ctx context.Context) (jobs.SnapshotOutcome, error) {
		return writeSnapshotJob(ctx, de, sw)
	}
	return w, nil
}

// defaultEnv is e for the default account's jobs: its logger names the
// account.
func defaultEnv(e *env) *env {
	de := *e
	de.logger = defaultLogger(e)
	return &de
}

// snapshotInterval is the longest wait between snapshots the schedules
// promise: the snapshot schedule's, or when it is off and snapshots follow
// syncs, the sync schedule's; 0 when none does.
func snapshotInterval(cfg Config, s jobs.Schedules) time.Duration {
	now := time.Now()
	if s.Snapshot != nil {
		return jobs.ScheduleInterval(s.Snapshot, now)
	}
	if cfg.SnapshotAfterSync {
		return jobs.ScheduleInterval(s.Sync, now)
	}
	return 0
}

// start builds what needs the database (the API client reads a stored OAuth
// token from it) and River's client, mounts the job UI and starts River:
// from then on the worker works and /readyz checks the database.
func (w *workerParts) start(ctx context.Context, e *env, handler *jobs.HTTPHandler) (*river.Client[pgx.Tx], error) {
	cfg := e.cfg
	de := defaultEnv(e)
	api, err := newWorkerAPIClient(ctx, de, w.store)
	if err != nil {
		return nil, err
	}
	w.metrics.WatchAPI(jobs.DefaultAccount, api)
	w.api = api
	s, err := syncer.New(api, w.store, cfg.syncerConfig(de.logger))
	if err != nil {
		return nil, err
	}
	def := accountDeps(de, jobs.DefaultAccount, s, w.store)
	def.Snapshot = w.snapshot
	w.fleet.def = def // before River starts the workers that read it
	deps := &jobs.Deps{
		Accounts:   w.fleet,
		Syncer:     def.Syncer,
		Store:      w.store,
		Snapshot:   w.snapshot,
		JobTimeout: cfg.JobTimeout,
		TimeSlice:  cfg.TimeSlice,
		SlotTime:   cfg.SlotTime,
		Drain:      w.drain,
		Observe:    w.metrics.Observe, ObserveReconcile: w.metrics.ObserveReconcile, ObserveSnapshot: w.metrics.ObserveSnapshot,
		ObserveYield: w.metrics.ObserveYield,
		Remedy:       func(ctx context.Context, account string) string { return remedyOf(ctx, e, account) },
		Logger:       e.logger,
	}
	rc, err := jobs.NewClient(jobs.ClientConfig{Pool: w.pool, RiverSchema: w.riverSchema, Deps: deps, Schedules: w.schedules,
		Accounts: w.fleet.Registered, FleetTick: cfg.FleetTick, Views: w.fleet.refreshViews, ViewsEvery: viewsSettle(cfg.FleetTick), MaxWorkers: cfg.Workers, SlowWorkers: cfg.SlowWorkers, LongWorkers: cfg.LongWorkers,
		SnapshotWorkers: cfg.SnapshotWorkers, SoftStop: cfg.ShutdownTimeout, Logger: quietLogger(e)})
	if err != nil {
		return nil, err
	}
	if handler != nil {
		if err := handler.StartJobUI(ctx, rc); err != nil {
			return nil, err
		}
	}
	if err := rc.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting the job queue: %w", err)
	}
	return rc, nil
}

// startChecked starts the worker (start, on runCtx) and then runs usersync
// check's checks it has not done, logging the first that fails; ctx, the
// worker's, cuts them short when it stops.
func (w *workerParts) startChecked(ctx, runCtx context.Context, e *env, handler *jobs.HTTPHandler) (*river.Client[pgx.Tx], error) {
	rc, err := w.start(runCtx, e, handler)
	if err != nil {
		return nil, err
	}
	logStartChecks(ctx, e, w.store, w.api)
	return rc, nil
}

// waitForDatabase returns once the database answers and both schemas are
// migrated, trying again with a backoff from dbRetryFirst to dbRetryMax, or
// with ctx's error when the worker is stopped first. Meanwhile handler's
// /readyz says why (503) and /metrics reports the database down. A new
// reason is logged at ERROR with what to check, the same one again at WARN
// once per try.
func waitForDatabase(ctx context.Context, e *env, store *warehouse.Store, riverSchema string, handler *jobs.HTTPHandler) error {
	began, wait, last := time.Now(), dbRetryFirst, ""
	for try := 1; ; try++ {
		nr := databaseReady(ctx, e, store, riverSchema)
		if nr == nil {
			if try > 1 {
				e.logger.InfoContext(ctx, "the database answers: the worker starts", "tries", try,
					"waited", time.Since(began).Round(time.Second).String())
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if handler != nil {
			handler.SetWaiting("waiting for the database: " + nr.public)
		}
		if why := nr.err.Error(); why != last {
			e.logger.ErrorContext(ctx, "the worker waits for its database and starts working once it answers", "error", why,
				"check", nr.check, "retry_in", wait.String())
			last = why
		} else {
			e.logger.WarnContext(ctx, "still waiting for the database", "try", try, "error", why, "retry_in", wait.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, dbRetryMax)
	}
}

// notReady is why the worker cannot work with its database yet.
type notReady struct {
	err    error  // for the log (DATABASE_URL's password redacted)
	public string // for /readyz, which anyone reaching the port reads: no host or user
	check  string // what an operator should check
}

// databaseReady returns nil when the database answers, both schemas are
// migrated and the warehouse takes writes, else why not: usersync check's
// first three checks, in its words.
func databaseReady(ctx context.Context, e *env, store *warehouse.Store, riverSchema string) *notReady {
	if nr := databaseReachable(ctx, e, store); nr != nil {
		return nr
	}
	if nr := migrationsCurrent(ctx, store, riverSchema); nr != nil {
		return nr
	}
	return writesTaken(ctx, store)
}
