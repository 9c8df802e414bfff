package cli

import (
	"context"

	"github.com/usersync/usersync/jobs/check"
	"github.com/usersync/usersync/sync/warehouse"
)

// The database checks, in the worker's terms (notReady).

func notReadyOf(p *check.Problem) *notReady {
	if p == nil {
		return nil
	}
	return &notReady{err: p.Err, public: p.Public, check: p.Check}
}

func databaseReachable(ctx context.Context, e *env, store *warehouse.Store) *notReady {
	return notReadyOf(check.DatabaseReachable(ctx, func(ctx context.Context) error { return pingPool(ctx, e, store.Pool()) }))
}

func migrationsCurrent(ctx context.Context, store *warehouse.Store, riverSchema string) *notReady {
	return notReadyOf(check.MigrationsCurrent(ctx, store, riverSchema))
}

func writesTaken(ctx context.Context, store *warehouse.Store) *notReady {
	return notReadyOf(check.WritesTaken(ctx, store))
}
