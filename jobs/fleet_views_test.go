package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestFleetViewsNeverHoldTheTick: remaking the union views is
// a job of its own (usersync_views), beside the fleet's tick. While a
// remake runs for long, the ticks go on inserting the accounts' due jobs; a
// remake that fails fails its job with the error, and the next period's
// job tries again; neither kind is counted as an account's job.
func TestFleetViewsNeverHoldTheTick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, riverSchema := migratedRiver(t, 10)
	logger := slog.New(slog.DiscardHandler)
	every, err := ParseSchedule("sync", "@every 1s", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	list := []Registered{{Name: "eu", Schedules: Schedules{Sync: every}}}
	release := make(chan struct{})
	var calls atomic.Int32
	views := func(ctx context.Context) error {
		switch calls.Add(1) {
		case 1: // a remake over many accounts: long
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		case 2:
			return errors.New("the union views' schema is locked by a test")
		}
		return nil
	}
	client, err := NewClient(ClientConfig{Pool: pool, RiverSchema: riverSchema,
		Deps:     &Deps{Accounts: pausedAccounts{}, Drain: make(chan struct{}), Logger: logger},
		Accounts: func(context.Context, pgx.Tx) ([]Registered, error) { return list, nil }, FleetTick: 300 * time.Millisecond,
		Views: views, ViewsEvery: 500 * time.Millisecond, SoftStop: time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, client)
	count := func(q string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+riverSchema+`".river_job WHERE `+q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitUntil(t, "the first remake of the views to start", 30*time.Second, func() bool { return calls.Load() >= 1 })
	ticks, syncs := count(`kind = 'usersync_due' AND state = 'completed'`), count(`kind = 'usersync_sync'`)
	waitUntil(t, "three ticks and a sync inserted while the remake runs", 30*time.Second, func() bool {
		return count(`kind = 'usersync_due' AND state = 'completed'`) >= ticks+3 && count(`kind = 'usersync_sync'`) > syncs
	})
	if calls.Load() != 1 || count(`kind = 'usersync_views' AND state = 'running'`) != 1 {
		t.Fatalf("a second remake began, or none runs, while the first still does (%d calls)", calls.Load())
	}
	close(release)
	waitUntil(t, "the failed remake, then the next", 30*time.Second, func() bool { return calls.Load() >= 3 })
	var errs string
	if err := pool.QueryRow(ctx, `SELECT errors::text FROM "`+riverSchema+`".river_job WHERE kind = 'usersync_views' AND state = 'discarded'`).Scan(&errs); err != nil ||
		!strings.Contains(errs, "the union views' schema is locked by a test") {
		t.Errorf("the failed remake's job: %q, %v; want it discarded with its error", errs, err)
	}
	counts, err := JobCounts(ctx, pool, riverSchema, "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Kind == KindDue || c.Kind == KindViews {
			t.Errorf("the fleet's own job %s is counted as the default account's", c.Kind)
		}
	}
}
