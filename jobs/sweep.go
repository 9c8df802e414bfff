package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/warehouse"
)

// orphanAge is how long a sync-type job must have been running, without
// anyone holding its account's sync lock, before it is taken for a dead
// worker's. A live run takes the lock as it starts (or its job snoozes) and
// keeps it to the end.
const orphanAge = 2 * time.Minute

// Sweeper makes jobs a dead worker left running available again when no one
// holds their account's sync lock, so their run resumes at once. It writes
// River's river_job itself because River's rescuer goes by time alone and
// cannot tell a dead worker from a long backfill.
type Sweeper struct {
	Pool        *pgxpool.Pool
	Store       *warehouse.Store // the default account's
	Accounts    ListAccounts     // nil: the default account only
	RiverSchema string
	Every       time.Duration // default 30s
	OrphanAge   time.Duration // default orphanAge
	Logger      *slog.Logger

	once  sync.Once
	river *riverDB
	err   error
}

// Run sweeps until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	every := s.Every
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// Each account's jobs made available are logged by Sweep, naming it.
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.logger().Warn("sweeping orphaned jobs failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep makes every account's orphaned sync-type jobs available, logs how
// many of each account's, and returns how many in all; its error names the
// accounts whose jobs it could not sweep.
func (s *Sweeper) Sweep(ctx context.Context) (int64, error) {
	s.once.Do(func() { s.river, s.err = newRiverDB(s.Pool, s.RiverSchema) })
	if s.err != nil {
		return 0, s.err
	}
	accounts := []Registered{{Name: DefaultAccount, Store: s.Store}}
	if s.Accounts != nil {
		more, err := s.Accounts(ctx)
		if err != nil {
			return 0, fmt.Errorf("listing the accounts: %w", err)
		}
		accounts = append(accounts, more...)
	}
	var n int64
	var errs []error
	for _, a := range accounts {
		m, err := s.sweep(ctx, a)
		n += m
		if err != nil {
			errs = append(errs, fmt.Errorf("account %s: %w", a.Name, err))
		} else if m > 0 {
			s.logger().InfoContext(ctx, "made orphaned jobs available again", "account", a.Name, "jobs", m)
		}
	}
	return n, errors.Join(errs...)
}

// logger is Logger, or none when unset.
func (s *Sweeper) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// sweep makes a's orphaned jobs available.
func (s *Sweeper) sweep(ctx context.Context, a Registered) (int64, error) {
	held, err := a.Store.LockHeld(ctx)
	if err != nil || held {
		return 0, err
	}
	tag, err := s.Pool.Exec(ctx, s.river.q.releaseOrphans, KindSync, KindBackfill, KindReconcile,
		cmp.Or(s.OrphanAge, orphanAge).Seconds(), a.Name)
	if err != nil {
		return 0, fmt.Errorf("releasing orphaned jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}
