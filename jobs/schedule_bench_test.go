package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/usersync/usersync/schema/schematest"
)

// statementCounter counts the statements a pool sends, and its commits.
type statementCounter struct{ statements, commits atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	if strings.EqualFold(strings.TrimSpace(d.SQL), "commit") {
		c.commits.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScheduling measures, for 200 accounts on "@every 20s" (each
// with its phase), what scheduling their syncs costs a leader over one
// period: the fleet's tick (a usersync_due job every 10 s, the default
// USERSYNC_FLEET_TICK, reading every account's last jobs in one statement
// and inserting the due ones in one batch) against one River periodic job
// per account (added at run time, each deciding when fired with the reads
// the default account's periodic jobs make). The syncs go to a queue no one
// works, so that only scheduling is counted; a client with neither is the
// baseline subtracted (leader election, maintenance, fetch polls).
//
//	go test ./jobs -run '^$' -bench BenchmarkScheduling -benchtime 1x
func BenchmarkScheduling(b *testing.B) {
	const accounts, period = 200, 20 * time.Second
	every, err := ParseSchedule("sync", fmt.Sprintf("@every %s", period), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	var reg []Registered
	for i := range accounts {
		reg = append(reg, Registered{Name: fmt.Sprintf("acct-%03d", i), Schedules: Schedules{Sync: every}})
	}
	window := period + 2*time.Second // one period, and the tick's second run within it
	base := measureScheduling(b, window, nil)
	b.Logf("baseline over %s: %d statements, %d commits, %s CPU", window, base.statements, base.commits, base.cpu)
	for _, v := range []struct {
		name  string
		setup func(cfg *river.Config, rdb *riverDB)
	}{
		{"tick", func(cfg *river.Config, rdb *riverDB) {
			list := func(context.Context, pgx.Tx) ([]Registered, error) { return reg, nil }
			river.AddWorker(cfg.Workers, &DueWorker{list: list, river: rdb, logger: slog.New(slog.DiscardHandler)})
			cfg.Queues[QueueFleet] = river.QueueConfig{MaxWorkers: 1}
			cfg.PeriodicJobs = []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(10*time.Second),
				func() (river.JobArgs, *river.InsertOpts) { return DueArgs{}, nil }, &river.PeriodicJobOpts{ID: KindDue})}
		}},
		{"periodic", func(cfg *river.Config, rdb *riverDB) {
			for _, a := range reg {
				cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(phaseFor(every, a.Name), func() (river.JobArgs, *river.InsertOpts) {
					// Fired by one replica's clock, it decides by the jobs kept, as the tick does.
					last, now, err := rdb.lastJobs(context.Background(), rdb.pool, []string{a.Name}, []string{KindSync})
					if err != nil {
						return nil, nil
					}
					var at *time.Time
					if j, ok := last[[2]string{a.Name, KindSync}]; ok {
						at = &j.created
					}
					if !isDueNow(every, at, now) {
						return nil, nil
					}
					return SyncArgs{Account: a.Name}, nil
				}, &river.PeriodicJobOpts{ID: "sync_" + a.Name}))
			}
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				m := measureScheduling(b, window, v.setup)
				jobs := float64(max(m.jobs, 1))
				b.ReportMetric(float64(m.statements-base.statements)/jobs, "statements/job")
				b.ReportMetric(float64(m.commits-base.commits)/jobs, "commits/job")
				b.ReportMetric(float64((m.cpu-base.cpu).Microseconds())/jobs, "cpu-µs/job")
				b.ReportMetric(float64(m.jobs), "jobs")
			}
		})
	}
}

// measured is what a client did over a window.
type measured struct {
	statements, commits, jobs int64
	cpu                       time.Duration
}

// measureScheduling runs a leader configured by setup (nil: the baseline)
// for window, once it leads, and counts its statements, commits, CPU and
// the syncs inserted.
func measureScheduling(b *testing.B, window time.Duration, setup func(cfg *river.Config, rdb *riverDB)) measured {
	b.Helper()
	ctx := context.Background()
	admin := schematest.NewPool(b, 4)
	riverSchema := RiverSchema(schematest.NewSchemaName(b, admin))
	if _, err := MigrateRiver(ctx, admin, riverSchema, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	pcfg, err := pgxpool.ParseConfig(schematest.DatabaseURL(b))
	if err != nil {
		b.Fatal(err)
	}
	counter := &statementCounter{}
	pcfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	rdb, err := newRiverDB(pool, riverSchema)
	if err != nil {
		b.Fatal(err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &SyncWorker{d: &Deps{}}) // registered, never run: its queue is not worked
	cfg := &river.Config{Schema: riverSchema, Workers: workers, Queues: map[string]river.QueueConfig{"bench_idle": {MaxWorkers: 1}},
		Logger: slog.New(slog.DiscardHandler), JobTimeout: -1}
	if setup != nil {
		setup(cfg, rdb)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = client.StopAndCancel(context.WithoutCancel(ctx)) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var leads bool
		_ = admin.QueryRow(ctx, `SELECT EXISTS (SELECT FROM "`+riverSchema+`".river_leader)`).Scan(&leads)
		if leads {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no leader elected")
		}
	}
	b.ResetTimer()
	s0, c0, cpu0 := counter.statements.Load(), counter.commits.Load(), cpuTime()
	time.Sleep(window)
	m := measured{statements: counter.statements.Load() - s0, commits: counter.commits.Load() - c0, cpu: cpuTime() - cpu0}
	b.StopTimer()
	_ = admin.QueryRow(ctx, `SELECT count(*) FROM "`+riverSchema+`".river_job WHERE kind = $1`, KindSync).Scan(&m.jobs)
	return m
}
