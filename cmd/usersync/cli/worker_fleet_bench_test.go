package cli

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// BenchmarkFleetRegistered times the worker fleet's
// listing of 500 registered accounts, what each fleet tick (and each
// metrics scrape) asks for, once the worker has read them
// once.
//
//	go test ./cmd/usersync/cli -run '^$' -bench BenchmarkFleetRegistered -benchtime 20x
func BenchmarkFleetRegistered(b *testing.B) {
	const n = 500
	ctx := context.Background()
	pool := schematest.NewPool(b, 4)
	fleetSchema := schematest.NewSchemaName(b, pool)
	cfg, err := configFor(map[string]string{"DATABASE_URL": schematest.DatabaseURL(b), "USERSYNC_SCHEMA": fleetSchema,
		"USERSYNC_API_URL": "http://127.0.0.1:1", "USERSYNC_API_TOKEN": "t", "USERSYNC_SNAPSHOT_DIR": "off"})
	if err != nil {
		b.Fatal(err)
	}
	e := &env{cfg: cfg, logger: slog.New(slog.DiscardHandler)}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+e.riverSchema()+`"`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+e.riverSchema()+`" CASCADE`) })
	reg, err := accounts.New(pool, e.riverSchema())
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("acct_%03d", i)
		if err := reg.Add(ctx, accounts.Account{Name: name, Settings: map[string]string{"USERSYNC_SCHEMA": fleetSchema + "_" + name,
			"USERSYNC_API_URL": "http://127.0.0.1:1", "USERSYNC_API_TOKEN": "t", "USERSYNC_SYNC_SCHEDULE": "@every 15m",
			"USERSYNC_RECONCILE_SCHEDULE": "0 3 * * *", "USERSYNC_PAGE_SIZE": "500"}}); err != nil {
			b.Fatal(err)
		}
	}
	f, err := newFleet(e, pool, nil, jobs.Schedules{})
	if err != nil {
		b.Fatal(err)
	}
	if got, err := f.Registered(ctx, nil); err != nil || len(got) != n+1 {
		b.Fatalf("Registered: %d accounts, %v", len(got), err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := f.Registered(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
