package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func workerCommand() command {
	return command{
		name:    "worker",
		summary: "run the daemon: scheduled syncs, backfills, reconciles and snapshots from the job queue",
		details: `Runs a River client on the database: every job kind is registered, and the
leader among the running workers enqueues the periodic jobs from the schedules,
so several replicas never duplicate a schedule. Serves /healthz, /readyz,
/metrics and the job UI (/riverui/) on USERSYNC_HTTP_ADDR.

On SIGTERM or SIGINT it stops fetching jobs, lets the page in flight commit,
gives running jobs USERSYNC_SHUTDOWN_TIMEOUT to end (an interrupted run keeps its
checkpoint and its job is picked up again), then exits 0. A second signal stops
at once.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return runWorker
		},
	}
}

func runWorker(ctx context.Context, e *env, _ []string) error {
	cfg := e.cfg
	schedules, err := parseSchedules(cfg, nil)
	if err != nil {
		return usageError{err}
	}
	if err := jobs.CheckUIGuard(cfg.HTTPAddr, cfg.HTTPToken, cfg.HTTPBasicAuth); err != nil {
		return usageError{err}
	}
	// A second signal stops at once; main's context takes the first.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	pool, err := openPool(ctx, e, int32(cfg.Workers)+6)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := warehouse.NewStore(pool, cfg.Schema)
	if err != nil {
		return usageError{err}
	}
	if err := requireMigrated(ctx, store); err != nil {
		return err
	}
	riverSchema := jobs.RiverSchema(cfg.Schema)
	if ok, err := jobs.RiverMigrationsCurrent(ctx, pool, riverSchema); err != nil || !ok {
		return fmt.Errorf("job queue schema %s is not migrated: run usersync migrate first", riverSchema)
	}
	api, err := newAPIClient(ctx, e, store)
	if err != nil {
		return err
	}
	metrics := jobs.NewMetrics(pool, store, riverSchema, api, e.logger)
	drain := make(chan struct{})
	deps := &jobs.Deps{
		Syncer:              syncer.New(api, store, cfg.syncerConfig(e.logger)),
		Store:               store,
		SnapshotAfterSync:   cfg.SnapshotAfterSync,
		JobTimeout:          cfg.JobTimeout,
		Drain:               drain,
		Observe:             metrics.Observe,
		ObserveReconcile:    metrics.ObserveReconcile,
		MaxDeleteShare:      cfg.ReconcileMaxDelete,
		ReconcileMembership: cfg.ReconcileMembership,
		Logger:              e.logger,
	}
	if cfg.SnapshotDir != "off" {
		sw, err := newSnapshotWriter(e, pool, cfg.SnapshotDir)
		if err != nil {
			return err
		}
		deps.Snapshot = func(ctx context.Context) (jobs.SnapshotOutcome, error) {
			return writeSnapshotJob(ctx, e, sw)
		}
	}
	rc, err := jobs.NewClient(jobs.ClientConfig{Pool: pool, RiverSchema: riverSchema, Deps: deps, Schedules: schedules,
		MaxWorkers: cfg.Workers, SoftStop: cfg.ShutdownTimeout, Logger: quietLogger(e)})
	if err != nil {
		return err
	}
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	srv, err := startHTTP(runCtx, e, jobs.HTTPConfig{Pool: pool, Schema: cfg.Schema, RiverSchema: riverSchema, Metrics: metrics,
		River: rc, Addr: cfg.HTTPAddr, UIToken: cfg.HTTPToken, UIBasicAuth: cfg.HTTPBasicAuth, UIHosts: cfg.HTTPHosts, Logger: quietLogger(e)})
	if err != nil {
		return err
	}
	if err := rc.Start(runCtx); err != nil {
		return fmt.Errorf("starting the job queue: %w", err)
	}
	sweeper := &jobs.Sweeper{Pool: pool, Store: store, RiverSchema: riverSchema, OrphanAge: cfg.OrphanAge,
		Every: min(30*time.Second, cfg.OrphanAge), Logger: e.logger}
	var swept sync.WaitGroup
	swept.Go(func() { sweeper.Run(runCtx) })
	defer func() { cancelRun(); swept.Wait() }() // the sweeper ends before the pool closes, however this returns
	e.logger.Info("worker started", "schema", cfg.Schema, "river_schema", riverSchema, "workers", cfg.Workers,
		"sync_schedule", cfg.SyncSchedule, "reconcile_schedule", cfg.ReconcileSchedule, "snapshot_schedule", cfg.SnapshotSchedule,
		"http_addr", cfg.HTTPAddr)

	select {
	case <-ctx.Done():
	case <-rc.Stopped():
		return errors.New("the job queue stopped unexpectedly")
	}
	e.logger.Info("stopping: no new jobs; running jobs end after their page in flight", "shutdown_timeout", cfg.ShutdownTimeout.String())
	close(drain)
	stopped := make(chan error, 1)
	go func() { //nolint:gosec // G118: ctx is already cancelled; stopping needs its own deadline
		stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout+5*time.Second)
		defer cancel()
		stopped <- rc.Stop(stopCtx)
	}()
	var stopErr error
	select {
	case stopErr = <-stopped:
	case <-sigs: // the first signal is also delivered here; wait for a second
		select {
		case stopErr = <-stopped:
		case <-sigs:
			e.logger.Warn("second signal: stopping at once")
			hardCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			stopErr = rc.StopAndCancel(hardCtx)
			cancel()
		}
	}
	cancelRun()
	if srv != nil {
		shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(shutCtx)
		cancel()
	}
	if stopErr != nil && !errors.Is(stopErr, context.DeadlineExceeded) {
		return fmt.Errorf("stopping the job queue: %w", stopErr)
	}
	e.logger.Info("worker stopped")
	return nil
}

// parseSchedules parses the three schedules; sources names where each came
// from (a variable or a flag), for the error.
func parseSchedules(cfg Config, sources map[string]string) (jobs.Schedules, error) {
	var s jobs.Schedules
	for _, sch := range []struct {
		env  string
		spec string
		dst  *jobs.Schedule
	}{
		{"USERSYNC_SYNC_SCHEDULE", cfg.SyncSchedule, &s.Sync},
		{"USERSYNC_RECONCILE_SCHEDULE", cfg.ReconcileSchedule, &s.Reconcile},
		{"USERSYNC_SNAPSHOT_SCHEDULE", cfg.SnapshotSchedule, &s.Snapshot},
	} {
		name := cmp.Or(sources[sch.env], sch.env)
		var err error
		if *sch.dst, err = jobs.ParseSchedule(name, sch.spec, cfg.ScheduleMinInterval); err != nil {
			return s, err
		}
	}
	return s, nil
}

// startHTTP serves the health, readiness, metrics and job-UI endpoints, unless
// USERSYNC_HTTP_ADDR is off.
func startHTTP(ctx context.Context, e *env, hc jobs.HTTPConfig) (*http.Server, error) {
	if e.cfg.HTTPAddr == "off" {
		return nil, nil
	}
	handler, startUI, err := jobs.NewHTTPHandler(hc)
	if err != nil {
		return nil, err
	}
	if err := startUI(ctx); err != nil {
		return nil, fmt.Errorf("starting the job UI: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", e.cfg.HTTPAddr)
	if err != nil {
		return nil, usageError{fmt.Errorf("USERSYNC_HTTP_ADDR: %w", err)}
	}
	srv := jobs.NewHTTPServer(handler)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logger.Error("HTTP server stopped", "error", err.Error())
		}
	}()
	e.logger.Info("HTTP server listening", "addr", ln.Addr().String())
	return srv, nil
}
