package syncer_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// BenchmarkNoOpSync times an incremental sync of 200 users, 8 teams and
// their roles and profiles when nothing changed (what a fleet on a short
// period mostly runs) and reports the statements and commits it sends,
// counted through the pool (statementCounter): Run is the full path, as a
// command's sync takes it; Quiet is a worker's, whose Syncer's last run
// changed nothing (syncer.Quiet, else Run); Replicas is Quiet by two
// Syncers, each with its own Store, taking turns (two worker replicas).
func BenchmarkNoOpSync(b *testing.B) {
	for replicas, name := range []string{"Run", "Quiet", "Replicas"} {
		b.Run(name, func(b *testing.B) { benchmarkNoOpSync(b, replicas) })
	}
}

// benchmarkNoOpSync runs Run alone when replicas is 0, else Quiet (and Run
// when it declines) by that many Syncers in turn.
func benchmarkNoOpSync(b *testing.B, replicas int) {
	var c statementCounter
	sim := apisim.New(apisim.Options{Seed: 7, Users: 200})
	srv := httptest.NewServer(sim)
	b.Cleanup(srv.Close)
	store := migratedStore(b, countedPool(b, &c))
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		b.Fatal(err)
	}
	syncers := []*syncer.Syncer{mustNew(b, client, store, syncer.Config{})}
	for range replicas - 1 {
		other, err := warehouse.NewStore(store.Pool(), store.Schema())
		if err != nil {
			b.Fatal(err)
		}
		syncers = append(syncers, mustNew(b, client, other, syncer.Config{}))
	}
	ctx := context.Background()
	for _, kind := range []string{warehouse.KindFull, warehouse.KindIncremental} {
		if _, err := syncers[0].Run(ctx, syncer.Request{Kind: kind}); err != nil {
			b.Fatal(err)
		}
	}
	req := syncer.Request{Kind: warehouse.KindIncremental}
	c.start()
	n := 0
	for b.Loop() {
		s := syncers[n%len(syncers)]
		n++
		if replicas > 0 {
			if _, ok := s.Quiet(ctx, req); ok {
				continue
			}
		}
		if _, err := s.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	sqls, commits, ddl := c.stop()
	b.ReportMetric(float64(len(sqls))/float64(b.N), "statements/op")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/op")
	b.ReportMetric(float64(ddl)/float64(b.N), "ddl/op")
}
