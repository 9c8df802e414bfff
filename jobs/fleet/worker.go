package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/usersync/usersync/jobs"
)

// Worker is what a worker's River client takes beside the fleet.
type Worker struct {
	// Workers, SlowWorkers, LongWorkers and SnapshotWorkers are the slots
	// of each queue (jobs.ClientConfig).
	Workers, SlowWorkers, LongWorkers, SnapshotWorkers int
	JobTimeout, TimeSlice, SlotTime, SoftStop          time.Duration
	// Drain is closed when the process starts stopping.
	Drain <-chan struct{}
	// Remedy says what to do when the API refuses an account's
	// credentials (jobs.Deps.Remedy).
	Remedy func(ctx context.Context, account string) string
	// Logger is the jobs' logger; RiverLogger River's own.
	Logger, RiverLogger *slog.Logger
}

// Client returns the worker's River client: every job's account opened
// by the fleet, every account scheduled by the fleet's tick, the union
// views remade by its job, and every run told to the fleet's metrics.
func (f *Fleet) Client(w Worker) (*river.Client[pgx.Tx], error) {
	deps := &jobs.Deps{Accounts: f, JobTimeout: w.JobTimeout, TimeSlice: w.TimeSlice, SlotTime: w.SlotTime, Drain: w.Drain, Remedy: w.Remedy, Logger: w.Logger}
	if m := f.cfg.Metrics; m != nil {
		deps.Observe, deps.ObserveReconcile, deps.ObserveSnapshot, deps.ObserveYield = m.Observe, m.ObserveReconcile, m.ObserveSnapshot, m.ObserveYield
	}
	cfg := jobs.ClientConfig{Pool: f.cfg.Pool, RiverSchema: f.cfg.RiverSchema, Deps: deps, Accounts: f.Registered,
		FleetTick: f.cfg.Tick, MaxWorkers: w.Workers, SlowWorkers: w.SlowWorkers, LongWorkers: w.LongWorkers,
		SnapshotWorkers: w.SnapshotWorkers, SoftStop: w.SoftStop, Logger: w.RiverLogger}
	if f.cfg.Union != nil {
		cfg.Views, cfg.ViewsEvery = f.RefreshViews, ViewsSettle(f.cfg.Tick)
	}
	return jobs.NewClient(cfg)
}

// Stop stops the worker's River client rc after the first signal: it
// closes drain, takes no new jobs and gives running ones softStop (the
// client's SoftStop) to end after their page in flight; a second signal on
// sigs cancels them at once.
func Stop(rc *river.Client[pgx.Tx], drain chan struct{}, sigs <-chan os.Signal, softStop time.Duration, logger *slog.Logger) error {
	logger.Info("stopping: no new jobs; running jobs end after their page in flight", "shutdown_timeout", softStop.String())
	close(drain)
	stopped := make(chan error, 1)
	go func() { //nolint:gosec // G118: ctx is already cancelled; stopping needs its own deadline
		stopCtx, cancel := context.WithTimeout(context.Background(), softStop+5*time.Second)
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
			logger.Warn("second signal: stopping at once")
			hardCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			stopErr = rc.StopAndCancel(hardCtx)
			cancel()
		}
	}
	if stopErr != nil && !errors.Is(stopErr, context.DeadlineExceeded) {
		return fmt.Errorf("stopping the job queue: %w", stopErr)
	}
	logger.Info("worker stopped")
	return nil
}
