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
// changed nothing (syncer.Quiet, else Run).
func BenchmarkNoOpSync(b *testing.B) {
	for _, quiet := range []bool{false, true} {
		name := map[bool]string{false: "Run", true: "Quiet"}[quiet]
		b.Run(name, func(b *testing.B) { benchmarkNoOpSync(b, quiet) })
	}
}

func benchmarkNoOpSync(b *testing.B, quiet bool) {
	var c statementCounter
	sim := apisim.New(apisim.Options{Seed: 7, Users: 200})
	srv := httptest.NewServer(sim)
	b.Cleanup(srv.Close)
	store := migratedStore(b, countedPool(b, &c))
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		b.Fatal(err)
	}
	s := mustNew(b, client, store, syncer.Config{})
	ctx := context.Background()
	for _, kind := range []string{warehouse.KindFull, warehouse.KindIncremental} {
		if _, err := s.Run(ctx, syncer.Request{Kind: kind}); err != nil {
			b.Fatal(err)
		}
	}
	req := syncer.Request{Kind: warehouse.KindIncremental}
	c.start()
	for b.Loop() {
		if quiet {
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
