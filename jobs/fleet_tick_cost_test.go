package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/usersync/usersync/schema/schematest"
)

// pausedAccounts opens no account: every job the tick inserts is cancelled
// at once, so that only the tick works.
type pausedAccounts struct{}

func (pausedAccounts) Open(context.Context, string) (*Account, error) { return nil, ErrAccountPaused }
func (pausedAccounts) Opened(string) *Account                         { return nil }

// TestFleetTickCost measures the fleet's tick (the
// usersync_due job, from River's attempted_at to its finalized_at) at 500
// registered accounts, with the jobs River keeps for them: 8 days of syncs
// every 15 minutes and of daily reconciles (388,000 jobs). Its first tick
// finds every account's sync due (@every 5m) and inserts 500 jobs; the
// next ones find none due and only read. The accounts' listing is given:
// its cost is the registry's (the cli's BenchmarkFleetRegistered). A
// measurement, not a check: it runs only with USERSYNC_TICK_COST=1.
//
//	USERSYNC_TICK_COST=1 go test ./jobs -run TestFleetTickCost -v
func TestFleetTickCost(t *testing.T) {
	if os.Getenv("USERSYNC_TICK_COST") != "1" {
		t.Skip("a measurement: USERSYNC_TICK_COST=1 runs it")
	}
	const accounts = 500
	ctx := context.Background()
	pool := schematest.NewPool(t, 10)
	riverSchema := RiverSchema(schematest.NewSchemaName(t, pool))
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+riverSchema+`" CASCADE`) })
	fill := `INSERT INTO "` + riverSchema + `".river_job (state, max_attempts, created_at, scheduled_at, attempted_at, finalized_at, args, kind, queue)
		SELECT 'completed', 10, t, t, t, t + interval '1 second', jsonb_build_object('account', 'acct_' || a), $1, 'default'
		FROM generate_series(1, $2::int) a, generate_series(now() - interval '8 days', now() - interval '10 minutes', $3::interval) t`
	began := time.Now()
	if _, err := MigrateRiver(ctx, pool, riverSchema, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for kind, every := range map[string]string{KindSync: "15 minutes", KindReconcile: "1 day"} {
		if _, err := pool.Exec(ctx, fill, kind, accounts, every); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE "`+riverSchema+`".river_job`); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d accounts' jobs kept, made in %s", accounts, time.Since(began).Round(time.Second))
	// Migrating again makes the index over the jobs kept, where this
	// version has one: what upgrading to it costs.
	if _, err := pool.Exec(ctx, `DROP INDEX IF EXISTS "`+riverSchema+`".usersync_river_job_account_kind_created`); err != nil {
		t.Fatal(err)
	}
	indexed := time.Now()
	if _, err := MigrateRiver(ctx, pool, riverSchema, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	t.Logf("migrating again (making the index over the jobs kept, where this version has one): %s", time.Since(indexed).Round(time.Millisecond))
	sync, _ := ParseSchedule("sync", "@every 5m", time.Second)
	daily, _ := ParseSchedule("reconcile", "@every 48h", time.Second)
	list := make([]Registered, accounts)
	for i := range list {
		list[i] = Registered{Name: fmt.Sprintf("acct_%d", i+1), Schedules: Schedules{Sync: sync, Reconcile: daily}}
	}
	logger := slog.New(slog.DiscardHandler)
	client, err := NewClient(ClientConfig{Pool: pool, RiverSchema: riverSchema, Deps: &Deps{Accounts: pausedAccounts{}, Drain: make(chan struct{}), Logger: logger},
		Accounts: func(context.Context, pgx.Tx) ([]Registered, error) { return list, nil }, FleetTick: time.Second,
		MaxWorkers: 4, LongWorkers: 1, SnapshotWorkers: 1, SoftStop: 5 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_ = client.Stop(stopCtx)
	rows, err := pool.Query(ctx, `SELECT extract(epoch FROM finalized_at - attempted_at)::float8 FROM "`+riverSchema+`".river_job
		WHERE kind = $1 AND state = 'completed' ORDER BY id`, KindDue)
	if err != nil {
		t.Fatal(err)
	}
	var took []float64
	for rows.Next() {
		var s float64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		took = append(took, s)
	}
	if rows.Err() != nil || len(took) < 3 {
		t.Fatalf("%d ticks completed: %v", len(took), rows.Err())
	}
	var inserted int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+riverSchema+`".river_job WHERE kind = $1 AND created_at > $2`, KindSync, began).Scan(&inserted); err != nil {
		t.Fatal(err)
	}
	rest := slices.Clone(took[1:])
	slices.Sort(rest)
	t.Logf("first tick (every sync due, %d jobs inserted): %.3fs; the %d next (none due): median %.3fs, max %.3fs",
		inserted, took[0], len(rest), rest[len(rest)/2], rest[len(rest)-1])
}
