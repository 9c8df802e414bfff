package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/schema/schematest"
)

// BenchmarkFleetTick (#41 scale, point 2) times one tick of the fleet
// (DueWorker.Work) at 500 registered accounts, with the jobs River keeps
// for them: 8 days of syncs every 15 minutes and of daily reconciles (about
// 390,000 jobs). none-due: every account's last jobs are recent, the tick
// only reads; all-due: every account's sync is due, the tick inserts 500
// jobs (deleted between two ticks). The accounts' listing is given (its
// cost is the registry's: the cli's BenchmarkFleetRegistered).
//
//	go test ./jobs -run '^$' -bench BenchmarkFleetTick -benchtime 20x
func BenchmarkFleetTick(b *testing.B) {
	const accounts = 500
	ctx := context.Background()
	pool := schematest.NewPool(b, 8)
	riverSchema := RiverSchema(schematest.NewSchemaName(b, pool))
	if _, err := MigrateRiver(ctx, pool, riverSchema, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+riverSchema+`" CASCADE`) })
	fill := `INSERT INTO "` + riverSchema + `".river_job (state, max_attempts, created_at, scheduled_at, attempted_at, finalized_at, args, kind, queue)
		SELECT 'completed', 10, t, t, t, t + interval '1 second', jsonb_build_object('account', 'acct_' || a), $1, 'default'
		FROM generate_series(1, $2::int) a, generate_series(now() - interval '8 days', now() - interval '10 minutes', $3::interval) t`
	for kind, every := range map[string]string{KindSync: "15 minutes", KindReconcile: "1 day"} {
		if _, err := pool.Exec(ctx, fill, kind, accounts, every); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE "`+riverSchema+`".river_job`); err != nil {
		b.Fatal(err)
	}
	rdb, err := newRiverDB(pool, riverSchema)
	if err != nil {
		b.Fatal(err)
	}
	client, err := NewInsertClient(pool, riverSchema, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, sync string }{{"none-due", "@every 1h"}, {"all-due", "@every 5m"}} {
		b.Run(c.name, func(b *testing.B) {
			sync, _ := ParseSchedule("sync", c.sync, time.Second)
			daily, _ := ParseSchedule("reconcile", "@every 48h", time.Second)
			list := make([]Registered, accounts)
			for i := range list {
				list[i] = Registered{Name: fmt.Sprintf("acct_%d", i+1), Schedules: Schedules{Sync: sync, Reconcile: daily}}
			}
			w := &DueWorker{list: func(context.Context) ([]Registered, error) { return list, nil }, river: rdb, logger: slog.New(slog.DiscardHandler)}
			wctx := rivertest.WorkContext(ctx, client)
			job := &river.Job[DueArgs]{JobRow: &rivertype.JobRow{}}
			b.ResetTimer()
			for range b.N {
				if err := w.Work(wctx, job); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if _, err := pool.Exec(ctx, `DELETE FROM "`+riverSchema+`".river_job WHERE state = 'available'`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
