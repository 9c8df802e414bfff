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
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/users"
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
	store := migratedStore(b, pool)
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: url, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		b.Fatal(err)
	}
	return store, client
}

// BenchmarkBackfill syncs every user of a simulator into a fresh schema, end
// to end over HTTP and PostgreSQL, and reports users/s and the peak live heap.
// USERSYNC_BENCH_WRITERS sets syncer.Config.Writers (default 2).
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
		if v := os.Getenv("USERSYNC_BENCH_WRITERS"); v != "" {
			w, err := strconv.Atoi(v)
			if err != nil {
				b.Fatalf("USERSYNC_BENCH_WRITERS: %v", err)
			}
			cfg.Writers = w
		}
		if os.Getenv("USERSYNC_BENCH_DEBUG") != "" {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		sum, err := mustNew(b, client, store, cfg).Run(ctx, syncer.Request{Kind: warehouse.KindFull})
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

// typedPages fetches every user of the simulator at url as a sync asks
// for them, 1,000 per page, and types and hashes them the general way.
func typedPages(b *testing.B, url string) [][]normalize.Row {
	b.Helper()
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: url, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		b.Fatal(err)
	}
	norm := normalize.New(schema.User())
	q := jsonapi.Query{}.PageSize(1000).ProvideAuthorizationMeta().ProvideDataConnections()
	pages := client.Collection("users", q)
	var out [][]normalize.Row
	for {
		p, err := pages.Next(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if p == nil {
			return out
		}
		rows := make([]normalize.Row, 0, len(p.Data))
		for _, r := range p.Data {
			row, err := norm.Row(r)
			if err != nil {
				b.Fatal(err)
			}
			rows = append(rows, row)
		}
		out = append(out, rows)
	}
}

// BenchmarkLoadPages is the backfill without the API: the same pages,
// fetched and typed beforehand, written one at a time (users.Store.Write)
// into a fresh schema. It bounds what BenchmarkBackfill can reach.
func BenchmarkLoadPages(b *testing.B) {
	sim := apisim.New(apisim.Options{Seed: 1, Users: benchUsers(b)})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	pool := schematest.NewPool(b, 4)
	ctx := context.Background()
	pages := typedPages(b, srv.URL)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store, _ := freshSync(b, pool, srv.URL)
		u, err := users.New(store)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start, n := time.Now(), 0
		for _, rows := range pages {
			if _, err := u.Write(ctx, rows, nil, nil); err != nil {
				b.Fatal(err)
			}
			n += len(rows)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "users/s")
	}
}
