package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/check"
	"github.com/usersync/usersync/jobs/fleet"
)

func workerCommand() command {
	return command{
		name:    "worker",
		summary: "run the daemon: scheduled syncs, backfills, reconciles and snapshots from the job queue",
		details: `Runs a River client on the database: every job kind is registered, and the
leader among the running workers enqueues the periodic jobs from the schedules,
so several replicas never duplicate a schedule. One fleet serves every account:
the registered accounts' schedules are turned into jobs every
USERSYNC_FLEET_TICK; incremental syncs, backfills and reconciles, and snapshots
run in slots of their own (USERSYNC_WORKERS, USERSYNC_LONG_WORKERS,
USERSYNC_SNAPSHOT_WORKERS), and a sync still running after USERSYNC_SLOT_TIME
continues in the slow lane (USERSYNC_SLOW_WORKERS). Serves /healthz, /readyz, /metrics and the job UI
(/riverui/) on USERSYNC_HTTP_ADDR.

When the database does not answer at start, or its schemas are not migrated
yet, the worker waits for it instead of exiting: /healthz answers, /readyz
answers 503 with the reason, /metrics reports usersync_database_up 0, and it
tries again after 1 s, then twice as long each time up to 30 s, logging each
try; it starts working once the database answers. An account that uses OAuth
and has no refresh token stored yet does not stop it either: it logs once the
usersync auth login command to run, /healthz says so, and the account's jobs
wait for the login.

On SIGTERM or SIGINT it stops fetching jobs, lets the page in flight commit,
gives running jobs USERSYNC_SHUTDOWN_TIMEOUT to end (an interrupted run keeps its
checkpoint and its job is picked up again), then exits 0. A second signal stops
at once.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				we := *e
				we.logins = newLoginWaits() // an account not logged in yet waits: the worker works on
				return runWorker(ctx, &we, args)
			}
		},
	}
}

func runWorker(ctx context.Context, e *env, _ []string) error {
	cfg := e.cfg
	schedules, err := cfg.Schedules()
	if err != nil {
		return usageError{err}
	}
	if err := jobs.CheckUIGuard(cfg.HTTPAddr, cfg.HTTPToken, cfg.HTTPBasicAuth); err != nil {
		return usageError{err}
	}
	if err := cfg.RequireAPI(); err != nil {
		return usageError{err}
	}
	// A second signal stops at once; main's context takes the first.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	w, err := newWorkerParts(ctx, e, schedules)
	if err != nil {
		return err
	}
	defer w.pool.Close()
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	handler, srv, err := startHTTP(runCtx, e, jobs.HTTPConfig{Pool: w.pool, Schema: cfg.Schema, Store: w.store, RiverSchema: w.riverSchema,
		Metrics: w.metrics, Addr: cfg.HTTPAddr, UIToken: cfg.HTTPToken, UIBasicAuth: cfg.HTTPBasicAuth, UIHosts: cfg.HTTPHosts,
		Health: e.logins.note, Logger: quietLogger(e)})
	if err != nil {
		return err
	}
	defer shutdownHTTP(srv)
	wait := check.Wait{Store: w.store, RiverSchema: w.riverSchema, Logger: e.logger,
		Ping: func(ctx context.Context) error { return pingPool(ctx, e, w.pool) }}
	if handler != nil {
		wait.Waiting = handler.SetWaiting
	}
	if err := check.WaitForDatabase(ctx, wait); err != nil {
		if ctx.Err() != nil {
			e.logger.Info("worker stopped while waiting for its database")
			return nil
		}
		return err
	}
	rc, err := w.startChecked(ctx, runCtx, e, handler)
	if err != nil {
		return err
	}
	logStarted(e, w.riverSchema)

	select {
	case <-ctx.Done():
	case <-rc.Stopped():
		return errors.New("the job queue stopped unexpectedly")
	}
	err = fleet.Stop(rc, w.drain, sigs, e.cfg.ShutdownTimeout, e.logger)
	cancelRun()
	return err
}

// logStarted logs the worker's start with its settings.
func logStarted(e *env, riverSchema string) {
	cfg := e.cfg
	e.logger.Info("worker started", "schema", cfg.Schema, "river_schema", riverSchema, "workers", cfg.Workers,
		"slow_workers", cfg.SlowWorkers, "slot_time", cfg.SlotTime.String(),
		"long_workers", cfg.LongWorkers, "snapshot_workers", cfg.SnapshotWorkers, "fleet_tick", cfg.FleetTick.String(),
		"sync_schedule", cfg.SyncSchedule, "reconcile_schedule", cfg.ReconcileSchedule, "snapshot_schedule", cfg.SnapshotSchedule,
		"http_addr", cfg.HTTPAddr)
}

// startHTTP serves the health, readiness, metrics and job-UI endpoints, unless
// USERSYNC_HTTP_ADDR is off (then both are nil).
func startHTTP(ctx context.Context, e *env, hc jobs.HTTPConfig) (*jobs.HTTPHandler, *http.Server, error) {
	if e.cfg.HTTPAddr == "off" {
		return nil, nil, nil
	}
	handler, err := jobs.NewHTTPHandler(hc)
	if err != nil {
		return nil, nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", e.cfg.HTTPAddr)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("USERSYNC_HTTP_ADDR: %w", err)}
	}
	srv := jobs.NewHTTPServer(handler)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logger.Error("HTTP server stopped", "error", err.Error())
		}
	}()
	e.logger.Info("HTTP server listening", "addr", ln.Addr().String())
	return handler, srv, nil
}

// shutdownHTTP stops srv (nil when off), giving requests in flight two
// seconds.
func shutdownHTTP(srv *http.Server) {
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
