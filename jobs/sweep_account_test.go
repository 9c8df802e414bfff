package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestSweeperPerAccount: a job left running is taken for a dead
// worker's only when no session holds its own account's sync lock. A sweeper
// that read the default account's lock alone made a registered account's
// live backfill available again, to run twice, whenever the default account
// was idle.
func TestSweeperPerAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 6)
	stores := map[string]*warehouse.Store{}
	for _, name := range []string{DefaultAccount, "b"} {
		stores[name] = migratedStore(t, pool)
	}
	river := RiverSchema(stores[DefaultAccount].Schema())
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO `+schema.QuoteIdentifier(river)+`.river_job
		(kind, args, state, attempt, max_attempts, attempted_at) VALUES ('usersync_backfill', '{"full": true, "account": "b"}',
		'running', 1, 10, now() - interval '10 minutes') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	sw := &Sweeper{Pool: pool, Store: stores[DefaultAccount], RiverSchema: river, OrphanAge: time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Accounts: func(context.Context) ([]Registered, error) { return []Registered{{Name: "b", Store: stores["b"]}}, nil }}
	lock, err := stores["b"].TryLock(ctx) // b's backfill runs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lock.Release)
	if n, err := sw.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("with b's lock held, the sweep released %d jobs (%v): b's running backfill would run twice", n, err)
	}
	lock.Release() // b's worker died
	if n, err := sw.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("with b's lock free, the sweep released %d jobs (%v), want b's", n, err)
	}
	var state string
	if err := pool.QueryRow(ctx, `SELECT state::text FROM `+schema.QuoteIdentifier(river)+`.river_job WHERE id = $1`, id).Scan(&state); err != nil || state != "available" {
		t.Errorf("b's orphaned job is %q (%v), want available", state, err)
	}
}
