package snapshot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// usersGate holds the n-th users page request of the simulator (1-based)
// until released, and says when it arrives.
type usersGate struct {
	mu      sync.Mutex
	n, seen int
	arrived chan struct{}
	release chan struct{}
}

// hold arms the gate for the n-th users request from now.
func (g *usersGate) hold(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n, g.seen = n, 0
	g.arrived, g.release = make(chan struct{}), make(chan struct{})
}

func (g *usersGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.TrimSuffix(r.URL.Path, "/") == "/api/v2/users" {
			g.mu.Lock()
			g.seen++
			held := g.n > 0 && g.seen == g.n
			arrived, release := g.arrived, g.release
			g.mu.Unlock()
			if held {
				close(arrived)
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// newBareWarehouse is newWarehouse without a recorded sync.
func newBareWarehouse(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	pool := schematest.NewPool(t, 8)
	name := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return pool, name
}

func count(t testing.TB, pool *pgxpool.Pool, sql string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestSnapshotWaitsForCompletedSync: a snapshot taken while the first sync
// has committed the dimensions but not the users, or while an incremental
// sync has committed some of its pages, writes nothing and says why (issue
// the first worker start published 0 users beside 120
// teams); once the run succeeds, the snapshot holds everything it wrote.
func TestSnapshotWaitsForCompletedSync(t *testing.T) {
	t.Parallel()
	sim := apisim.New(apisim.Options{Seed: 38, Users: 240})
	gate := &usersGate{}
	srv := httptest.NewServer(gate.wrap(sim))
	t.Cleanup(srv.Close)
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("test-token"), UserAgent: "usersync-test",
		BackoffBase: time.Millisecond, BackoffMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pool, name := newBareWarehouse(t)
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := syncer.New(client, store, syncer.Config{PageSize: 50, Lookback: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	dest, _ := newLocal(t)
	w, err := New(pool, name, dest, testLogger(t), nil, Options{Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := func(table string) string { return pgx.Identifier{name, table}.Sanitize() }
	refused := func(what, want string) {
		t.Helper()
		for _, write := range []func(context.Context) (Manifest, error){w.Write, w.WriteChanged} {
			m, err := write(ctx)
			var nr *NotReadyError
			if !errors.As(err, &nr) || !strings.Contains(nr.Reason, want) {
				users, teams := int64(-1), int64(-1)
				if u, ok := m.Table("users"); ok {
					users = u.Rows
				}
				if tm, ok := m.Table("teams"); ok {
					teams = tm.Rows
				}
				t.Errorf("%s: snapshot %q (users %d, teams %d), %v; want a NotReadyError saying %q", what, m.ID, users, teams, err, want)
			}
		}
		if ids, err := Manifests(ctx, dest, name); err != nil || len(ids) != 0 {
			t.Errorf("%s: manifests %q, %v; want none", what, ids, err)
		}
	}
	runWhileHeld := func(kind string, wait func() bool) <-chan error {
		done := make(chan error, 1)
		go func() { _, err := s.Run(ctx, syncer.Request{Kind: kind}); done <- err }()
		select {
		case <-gate.arrived:
		case err := <-done:
			t.Fatalf("%s run ended before its held request: %v", kind, err)
		}
		waitFor(t, wait)
		return done
	}

	// The first sync: the dimensions are in, the users' first page is held.
	gate.hold(1)
	refused("before any sync", "no sync has walked every user")
	done := runWhileHeld(warehouse.KindIncremental, func() bool {
		return count(t, pool, `SELECT count(*) FROM `+q("teams")) == int64(len(sim.Resources("team")))
	})
	if n := count(t, pool, `SELECT count(*) FROM `+q("users")); n != 0 {
		t.Fatalf("%d users written while the first page was held", n)
	}
	refused("first sync, dimensions committed", "is under way")
	close(gate.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	first, err := w.WriteChanged(ctx)
	if err != nil {
		t.Fatalf("after the first sync: %v", err)
	}
	if u, _ := first.Table("users"); u.Rows != int64(len(sim.UserIDs())) {
		t.Errorf("snapshot after the first sync holds %d users, want %d", u.Rows, len(sim.UserIDs()))
	}

	// An incremental sync with its first page committed, the second held.
	sim.UpdateUsers(120)
	gate.hold(2)
	done = runWhileHeld(warehouse.KindIncremental, func() bool {
		return count(t, pool, `SELECT coalesce(max(pages), 0) FROM `+q("sync_runs")+` WHERE status = 'running'`) >= 1
	})
	m, err := w.WriteChanged(ctx)
	var nr *NotReadyError
	if !errors.As(err, &nr) || nr.Status != "running" || nr.Kind != warehouse.KindIncremental {
		t.Errorf("incremental sync with a page committed: snapshot %q, %v; want a NotReadyError of the running run", m.ID, err)
	}
	close(gate.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	second, err := w.WriteChanged(ctx)
	if err != nil || second.ID == first.ID {
		t.Fatalf("after the incremental sync: %s, %v; want a new snapshot", second.ID, err)
	}
	if ids, _ := Manifests(ctx, dest, name); len(ids) != 2 {
		t.Errorf("manifests %q, want the two written after runs", ids)
	}
}

// TestCheckSettled: which states of sync_runs a snapshot is written from.
func TestCheckSettled(t *testing.T) {
	t.Parallel()
	pool, name := newBareWarehouse(t)
	ctx := context.Background()
	q, err := newStatements(name)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		kind, status string
		ranged       bool // range_from set: not a walk of every user
		ended        int  // minutes after the first run's start; 0: not ended
	}
	full := run{"full", "succeeded", false, 10}
	for _, tc := range []struct {
		name  string
		runs  []run // in run_id order
		ready bool
		runID int64 // of the NotReadyError
	}{
		{"no run", nil, false, 0},
		{"a full sync succeeded", []run{full}, true, 0},
		{"the first incremental (no watermark) succeeded", []run{{"incremental", "succeeded", false, 10}}, true, 0},
		{"the first sync is under way", []run{{"incremental", "running", false, 0}}, false, 1},
		{"the first sync failed", []run{{"incremental", "failed", false, 5}}, false, 0},
		{"only ranged runs succeeded", []run{{"backfill", "succeeded", true, 5}, {"incremental", "succeeded", true, 9}}, false, 0},
		{"only a reconcile succeeded", []run{{"reconcile", "succeeded", false, 5}}, false, 0},
		{"an incremental is under way", []run{full, {"incremental", "running", true, 0}}, false, 2},
		{"an incremental failed last", []run{full, {"incremental", "failed", true, 20}}, false, 2},
		{"an incremental paused last", []run{full, {"incremental", "paused", true, 20}}, false, 2},
		{"a reconcile succeeded after a failed incremental", []run{full, {"incremental", "failed", true, 20},
			{"reconcile", "succeeded", false, 30}}, true, 0},
		{"an older failed run resumed (running again)", []run{full, {"incremental", "running", true, 0},
			{"reconcile", "succeeded", false, 30}}, false, 2},
		{"an abandoned run ended last", []run{full, {"incremental", "succeeded", true, 20}, {"backfill", "abandoned", true, 40}}, true, 0},
	} {
		if _, err := pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{name, "sync_runs"}.Sanitize()+` RESTART IDENTITY`); err != nil {
			t.Fatal(err)
		}
		start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		for _, r := range tc.runs {
			var from, ended *time.Time
			if r.ranged {
				from = &start
			}
			if r.ended > 0 {
				at := start.Add(time.Duration(r.ended) * time.Minute)
				ended = &at
			}
			if _, err := pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{name, "sync_runs"}.Sanitize()+
				` (kind, status, started_at, finished_at, range_from) VALUES ($1, $2, $3, $4, $5)`, r.kind, r.status, start, ended, from); err != nil {
				t.Fatal(err)
			}
		}
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			return checkSettled(ctx, tx, q)
		})
		var nr *NotReadyError
		switch {
		case tc.ready && err != nil:
			t.Errorf("%s: %v; want a snapshot", tc.name, err)
		case !tc.ready && (!errors.As(err, &nr) || nr.RunID != tc.runID || nr.Reason == ""):
			t.Errorf("%s: %v; want a NotReadyError naming run %d", tc.name, err, tc.runID)
		case !tc.ready:
			// A run walked every user: a sync that succeeded, not ranged.
			walked := slices.ContainsFunc(tc.runs, func(r run) bool { return r.status == "succeeded" && !r.ranged && r.kind != "reconcile" })
			if nr.NoCompleteWalk == walked {
				t.Errorf("%s: NoCompleteWalk %t, want %t", tc.name, nr.NoCompleteWalk, !walked)
			}
		}
	}
}
