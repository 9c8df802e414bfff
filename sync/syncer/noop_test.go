package syncer_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// newCountedEnv is newEnv on a pool whose statements c counts.
func newCountedEnv(t *testing.T, opts apisim.Options, c *statementCounter) *testEnv {
	t.Helper()
	opts.Seed = 7
	sim := apisim.New(opts)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	store := migratedStore(t, countedPool(t, c))
	return &testEnv{tb: t, sim: sim, srv: srv, client: newClient(t, srv.URL, jsonapi.StaticToken("test-token")), store: store}
}

// countedRun runs an incremental sync and returns its summary and what it
// sent to PostgreSQL.
func countedRun(t *testing.T, e *testEnv, c *statementCounter) (syncer.Summary, []string, int, int) {
	t.Helper()
	c.start()
	sum := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	sqls, commits, ddl := c.stop()
	return sum, sqls, commits, ddl
}

// assertQuiet fails unless a sync that received nothing changed made no
// DDL, committed at most twice (its start and its end) and sent at most
// 40 statements.
func assertQuiet(t *testing.T, what string, sqls []string, commits, ddl int) {
	t.Helper()
	if ddl != 0 || commits > 2 || len(sqls) > 40 {
		for _, s := range sqls {
			t.Log(strings.Join(strings.Fields(s), " "))
		}
		t.Errorf("%s: %d statements (at most 40), %d commits (at most 2), %d DDL (want 0)", what, len(sqls), commits, ddl)
	}
}

// TestNoOpSyncWritesNothing: an incremental sync that receives no changed
// user, team, role or profile creates no temporary table, commits only its
// start and its end and sends few statements; one changed user and one
// changed team are then mirrored exactly, and the sync after them is quiet
// again.
func TestNoOpSyncWritesNothing(t *testing.T) {
	t.Parallel()
	var c statementCounter
	e := newCountedEnv(t, apisim.Options{Users: 600}, &c)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})

	sum, sqls, commits, ddl := countedRun(t, e, &c)
	assertQuiet(t, "no-op sync", sqls, commits, ddl)
	// The lock and its unlock, the start's reads, the run's start and end:
	// one transaction each in PostgreSQL's xact_commit.
	if n := c.transactions(); n > 9 {
		t.Errorf("no-op sync: %d transactions, want at most 9", n)
	}
	for _, s := range sqls {
		if strings.Contains(s, "reltuples") {
			t.Errorf("a no-op sync checked the statistics of users: %s", strings.Join(strings.Fields(s), " "))
		}
	}
	if sum.Inserted+sum.Updated+sum.Quarantined != 0 || sum.Unchanged == 0 {
		t.Errorf("no-op sync summary: %+v", sum)
	}
	if teams := sum.Dimensions["teams"]; teams.Unchanged != e.count(t, `SELECT count(*) FROM %s.teams`) {
		t.Errorf("no-op sync counted %d teams unchanged, want every team", teams.Unchanged)
	}
	e.assertMirrors(t)
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE status = 'succeeded' AND kind = 'incremental' AND pages = 1 AND max_updated_at IS NOT NULL`); n != 1 {
		t.Errorf("the no-op run's row lacks its last checkpoint (%d rows with it)", n)
	}

	if _, err := e.sim.UpdateUsers(1), e.sim.Update("team", e.count(t, `SELECT min(id) FROM %s.teams`)); err != nil {
		t.Fatal(err)
	}
	sum, _, _, _ = countedRun(t, e, &c)
	if sum.Updated != 1 || sum.Dimensions["teams"].Updated != 1 {
		t.Errorf("one user and one team changed; summary: %+v", sum)
	}
	e.assertMirrors(t)

	_, sqls, commits, ddl = countedRun(t, e, &c)
	assertQuiet(t, "no-op sync after a change", sqls, commits, ddl)
	e.assertMirrors(t)
}

// TestFullSyncDoesNotTrustDigests: a team changed in the warehouse behind
// the sync's back stays as it is through incremental syncs whose teams list
// did not change, and a full sync writes it back.
func TestFullSyncDoesNotTrustDigests(t *testing.T) {
	t.Parallel()
	var c statementCounter
	e := newCountedEnv(t, apisim.Options{Users: 300}, &c)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	ctx := context.Background()
	if _, err := e.store.Pool().Exec(ctx, `UPDATE "`+e.store.Schema()+`".teams SET name = 'tampered' WHERE id = (SELECT min(id) FROM "`+e.store.Schema()+`".teams)`); err != nil {
		t.Fatal(err)
	}
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if n := e.count(t, `SELECT count(*) FROM %s.teams WHERE name = 'tampered'`); n != 1 {
		t.Fatalf("the incremental sync rewrote an unchanged teams list (%d tampered rows left)", n)
	}
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	e.assertMirrors(t)
}

// TestNoOpSyncResolvesQuarantine: a user quarantined by one sync and typed
// by the next has its record resolved, though nothing else changed.
func TestNoOpSyncResolvesQuarantine(t *testing.T) {
	t.Parallel()
	var c statementCounter
	e := newCountedEnv(t, apisim.Options{Users: 300}, &c)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	ctx := context.Background()
	q := `INSERT INTO "` + e.store.Schema() + `".quarantine (resource_type, resource_id, error, raw)
		SELECT 'user', id::text, 'test', '{}' FROM "` + e.store.Schema() + `".users ORDER BY updated_at DESC LIMIT 1`
	if _, err := e.store.Pool().Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if n := e.count(t, `SELECT count(*) FROM %s.quarantine WHERE resolved_at IS NULL`); n != 0 {
		t.Errorf("%d quarantine records left unresolved by a sync that typed their users", n)
	}
	_, sqls, commits, ddl := countedRun(t, e, &c)
	assertQuiet(t, "no-op sync once resolved", sqls, commits, ddl)
}
