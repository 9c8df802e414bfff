package syncer_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsonapi/apisim"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// benchUsers is the dataset size of the backfill benchmarks:
// USERSYNC_BENCH_USERS, default 100,000.
func benchUsers(b *testing.B) int {
	if v := os.Getenv("USERSYNC_BENCH_USERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("USERSYNC_BENCH_USERS: %v", err)
		}
		return n
	}
	return 100_000
}

// peakHeap samples the live heap every few milliseconds until stopped.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); return peak.Load() }
}

// freshSync returns a store on a newly migrated schema and a client of the
// simulator at url: what each iteration of a sync benchmark starts from.
func freshSync(b *testing.B, pool *pgxpool.Pool, url string) (*warehouse.Store, *jsonapi.Client) {
	b.Helper()
	name := schematest.NewSchemaName(b, pool)
	if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		b.Fatal(err)
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		b.Fatal(err)
	}
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: url, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		b.Fatal(err)
	}
	return store, client
}

// BenchmarkBackfill syncs every user of a simulator into a fresh schema, end
// to end over HTTP and PostgreSQL, and reports users/s and the peak live heap.
func BenchmarkBackfill(b *testing.B) {
	n := benchUsers(b)
	sim := apisim.New(apisim.Options{Seed: 1, Users: n})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	pool := schematest.NewPool(b, 8)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store, client := freshSync(b, pool, srv.URL)
		runtime.GC()
		b.StartTimer()
		stop := peakHeap()
		start := time.Now()
		cfg := syncer.Config{PageSize: 1000}
		if os.Getenv("USERSYNC_BENCH_DEBUG") != "" {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		sum, err := syncer.New(client, store, cfg).Run(ctx, syncer.Request{Kind: warehouse.KindFull})
		elapsed := time.Since(start)
		peak := stop()
		if err != nil {
			b.Fatal(err)
		}
		if sum.Inserted != int64(n) {
			b.Fatalf("inserted %d of %d", sum.Inserted, n)
		}
		b.ReportMetric(float64(n)/elapsed.Seconds(), "users/s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(sum.Requests), "requests")
	}
}

// BenchmarkRawCopy is the yardstick of BenchmarkBackfill: the same users,
// fetched and typed beforehand, copied straight into an empty copy of the
// users table, one transaction per 1,000 rows, the way a sync commits.
func BenchmarkRawCopy(b *testing.B) {
	n := benchUsers(b)
	sim := apisim.New(apisim.Options{Seed: 1, Users: n})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	pool := schematest.NewPool(b, 4)
	ctx := context.Background()
	client, _ := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("bench")})
	norm := normalize.New(schema.User())
	var rows []normalize.Row
	pages := client.Collection("users", jsonapi.Query{}.PageSize(1000))
	for {
		p, err := pages.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if p == nil {
			break
		}
		for _, r := range p.Data {
			row, err := norm.Row(r)
			if err != nil {
				b.Fatal(err)
			}
			rows = append(rows, row)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := schematest.NewSchemaName(b, pool)
		if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `CREATE TABLE "`+name+`".users_raw (LIKE "`+name+`".users INCLUDING ALL)`); err != nil {
			b.Fatal(err)
		}
		store, _ := warehouse.NewStore(pool, name)
		b.StartTimer()
		start := time.Now()
		if err := store.CopyUsersRaw(ctx, "users_raw", rows, 1000); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "users/s")
	}
}
