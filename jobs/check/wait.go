package check

import (
	"context"
	"log/slog"
	"time"

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

// Wait is what WaitForDatabase waits for, and whom it tells.
type Wait struct {
	Store       *warehouse.Store
	RiverSchema string
	// Ping checks the database answers; its error never holds the
	// password.
	Ping func(context.Context) error
	// Waiting, when set, is told each reason, in public words (for
	// /readyz: no host or user).
	Waiting func(reason string)
	Logger  *slog.Logger
}

// WaitForDatabase returns once the database answers and both schemas are
// migrated and the warehouse takes writes (usersync check's first three
// checks), trying again with a backoff from dbRetryFirst to dbRetryMax, or
// with ctx's error when the worker is stopped first. A new reason is logged
// at ERROR with what to check, the same one again at WARN once per try.
func WaitForDatabase(ctx context.Context, w Wait) error {
	began, wait, last := time.Now(), dbRetryFirst, ""
	for try := 1; ; try++ {
		p := databaseReady(ctx, w)
		if p == nil {
			if try > 1 {
				w.Logger.InfoContext(ctx, "the database answers: the worker starts", "tries", try,
					"waited", time.Since(began).Round(time.Second).String())
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if w.Waiting != nil {
			w.Waiting("waiting for the database: " + p.Public)
		}
		if why := p.Err.Error(); why != last {
			w.Logger.ErrorContext(ctx, "the worker waits for its database and starts working once it answers", "error", why,
				"check", p.Check, "retry_in", wait.String())
			last = why
		} else {
			w.Logger.WarnContext(ctx, "still waiting for the database", "try", try, "error", why, "retry_in", wait.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, dbRetryMax)
	}
}

// databaseReady returns nil when the database answers, both schemas are
// migrated and the warehouse takes writes, else why not.
func databaseReady(ctx context.Context, w Wait) *Problem {
	if p := DatabaseReachable(ctx, w.Ping); p != nil {
		return p
	}
	if p := MigrationsCurrent(ctx, w.Store, w.RiverSchema); p != nil {
		return p
	}
	return WritesTaken(ctx, w.Store)
}
