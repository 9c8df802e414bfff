package jobs

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// TestFleetRunsOldestDueFirst: within a queue, jobs of one
// kind run in the order they became due, whatever their account: not by
// account, nor by when they were inserted.
func TestFleetRunsOldestDueFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 12)
	logger := slog.New(slog.DiscardHandler)
	riverSchema := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(ctx, pool, riverSchema, logger); err != nil {
		t.Fatal(err)
	}
	reg := &testAccounts{}
	for i, name := range []string{"x", "y", "z"} {
		reg.accounts = append(reg.accounts, newTestAccount(t, pool, logger,
			accountSpec{name: name, opts: apisim.Options{Seed: int64(70 + i), Users: 20}, token: "right", schedule: "off"}))
	}
	client, err := NewClient(ClientConfig{Pool: pool, RiverSchema: riverSchema, Deps: &Deps{Accounts: reg, Drain: make(chan struct{}), Logger: logger},
		MaxWorkers: 1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// Inserted x, y, z; due z, x, y.
	due := map[string]time.Duration{"x": -2 * time.Minute, "y": -time.Minute, "z": -3 * time.Minute}
	for _, name := range []string{"x", "y", "z"} {
		if _, err := client.Insert(ctx, SyncArgs{Account: name}, &river.InsertOpts{ScheduledAt: time.Now().Add(due[name])}); err != nil {
			t.Fatal(err)
		}
	}
	startClient(t, client)
	var order []string
	waitUntil(t, "the three syncs", 60*time.Second, func() bool {
		order = nil
		rows, err := pool.Query(ctx, `SELECT args->>'account' FROM "`+riverSchema+`".river_job
			WHERE kind = 'usersync_sync' AND state = 'completed' ORDER BY attempted_at`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			order = append(order, a)
		}
		return len(order) == 3
	})
	if want := []string{"z", "x", "y"}; !slices.Equal(order, want) {
		t.Errorf("the syncs ran in the order %v, want %v (oldest due first)", order, want)
	}
}
