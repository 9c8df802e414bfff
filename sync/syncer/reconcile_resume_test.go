package syncer_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// walkLog records the id walk's requests (users sorted by id) the simulator
// is sent.
type walkLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *walkLog) wrap(sim *apisim.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/users" && r.URL.Query().Get("sort") == "id" {
			l.mu.Lock()
			l.urls = append(l.urls, r.URL.RawQuery)
			l.mu.Unlock()
		}
		sim.ServeHTTP(w, r)
	})
}

// take returns the walk requests since the last call: how many, and how
// many of them started at the first id (no page[after]).
func (l *walkLog) take() (requests, fromStart int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range l.urls {
		if !strings.Contains(q, "page%5Bafter%5D=") && !strings.Contains(q, "page[after]=") {
			fromStart++
		}
	}
	requests = len(l.urls)
	l.urls = nil
	return requests, fromStart
}

// walkPages is how many pages of size a walk of ids above after takes.
func walkPages(ids []int64, after int64, size int) int {
	n := 0
	for _, id := range ids {
		if id > after {
			n++
		}
	}
	return (n + size - 1) / size
}

// interruptions cut a reconcile short once its walk has recorded k pages.
var interruptions = []struct {
	name string
	cut  func(t *testing.T, e *testEnv, k int64) (*syncer.Syncer, context.Context)
}{
	{name: "cancelled", cut: func(t *testing.T, e *testEnv, k int64) (*syncer.Syncer, context.Context) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		return e.syncer(syncer.Config{Progress: func(p syncer.Progress) {
			if p.Pages == k {
				cancel() // a restart: SIGTERM, a rolling deploy
			}
		}}), ctx
	}},
	{name: "connection killed", cut: func(t *testing.T, e *testEnv, k int64) (*syncer.Syncer, context.Context) {
		store, kill := killableStore(t, e)
		var once sync.Once
		return mustNew(t, e.client, store, syncer.Config{Progress: func(p syncer.Progress) {
			if p.Pages == k {
				once.Do(kill)
			}
		}}), context.Background()
	}},
}

// TestReconcileResumesItsWalk: a reconcile cut short after k pages of its
// id walk, cancelled or with its database connection killed, is resumed by
// the next reconcile from the page after the last it recorded: the retry
// sends only the remaining walk pages (none from the first id), and the
// warehouse then mirrors the API, users created, deleted, changed and
// come back between the attempts included. A user deleted behind the
// walk's cursor meanwhile is marked by the next reconcile, whose walk
// starts afresh.
func TestReconcileResumesItsWalk(t *testing.T) {
	t.Parallel()
	const size, k = 100, 4
	for _, cut := range interruptions {
		t.Run(cut.name, func(t *testing.T) {
			t.Parallel()
			log := &walkLog{}
			e := newEnvWith(t, apisim.Options{Users: 1000, Knobs: apisim.Knobs{PageSizeCap: size}}, log.wrap)
			e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
			mustSim(t, e.sim.DeleteUser(20)) // behind the cursor when the walk stops; back in the pause
			before := e.sim.UserIDs()
			cursor := before[k*size-1] // the last id of the k-th page
			log.take()

			s, ctx := cut.cut(t, e, k)
			if _, err := reconcileAlone(t, ctx, s, syncer.ReconcileRequest{}); err == nil {
				t.Fatal("the interrupted reconcile succeeded")
			}
			if n, _ := log.take(); n < k {
				t.Fatalf("the first attempt sent %d walk requests, want at least %d", n, k)
			}

			// The pause: created and changed ahead of the cursor, deleted
			// ahead of it, come back behind it.
			created := e.sim.CreateUsers(3)
			mustSim(t, e.sim.UpdateUser(700), e.sim.DeleteUser(900), e.sim.RestoreUser(20))

			sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
			requests, fromStart := log.take()
			want := walkPages(e.sim.UserIDs(), cursor, size)
			t.Logf("resumed after %d pages: %d walk requests (%d from the first id), want %d; %+v", k, requests, fromStart, want, sum)
			if requests != want || fromStart != 0 {
				t.Errorf("the retry sent %d walk requests, %d of them from the first id; want the %d after page %d", requests, fromStart, want, k)
			}
			if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE run_id = $1 AND (summary->>'scan_resumed_pages')::int = $2
				AND (summary->>'scan_pages')::int = $3`, sum.RunID, k, want); n != 1 {
				t.Errorf("the run's summary does not say it resumed after %d pages and walked %d", k, want)
			}
			if sum.Missing != int64(len(created)) || sum.Stale != 1 || sum.Deleted != 1 || sum.Scanned != int64(len(before)+len(created)-1) {
				t.Errorf("missing %d (want %d), stale %d (want 1), deleted %d (want 1), scanned %d", sum.Missing, len(created), sum.Stale, sum.Deleted, sum.Scanned)
			}
			e.assertMirrors(t)

			// The finished walk is not resumed again. A user deleted behind a
			// walk's cursor is not marked by that walk; the next one marks it.
			mustSim(t, e.sim.DeleteUser(10))
			sum = e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
			if requests, fromStart = log.take(); fromStart != 1 || requests != walkPages(e.sim.UserIDs(), 0, size) {
				t.Errorf("the next reconcile sent %d walk requests, %d from the first id; want a whole walk", requests, fromStart)
			}
			if sum.Deleted != 1 {
				t.Errorf("the next reconcile marked %d deleted, want 1", sum.Deleted)
			}
			e.assertMirrors(t)
		})
	}
}

// TestReconcileWalkTooOldStartsOver: a walk older than its bound (6 hours
// by default), or recorded against another API URL, or whose scan lost its
// rows (a crash of PostgreSQL empties unlogged tables), is not resumed: the
// next reconcile walks from the first id.
func TestReconcileWalkTooOldStartsOver(t *testing.T) {
	t.Parallel()
	for name, spoil := range map[string]string{
		"too old":        `UPDATE %s.reconcile_walk SET started_at = started_at - interval '7 hours'`,
		"another API":    `UPDATE %s.reconcile_walk SET origin = 'https://elsewhere.example/api/v2/users'`,
		"scan emptied":   `TRUNCATE %s.reconcile_scan`,
		"left as it was": "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := &walkLog{}
			e := newEnvWith(t, apisim.Options{Users: 600, Knobs: apisim.Knobs{PageSizeCap: 100}}, log.wrap)
			e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
			s, ctx := interruptions[0].cut(t, e, 3)
			if _, err := reconcileAlone(t, ctx, s, syncer.ReconcileRequest{}); err == nil {
				t.Fatal("the interrupted reconcile succeeded")
			}
			if spoil != "" {
				if _, err := e.store.Pool().Exec(context.Background(), strings.ReplaceAll(spoil, "%s", `"`+e.store.Schema()+`"`)); err != nil {
					t.Fatal(err)
				}
			}
			log.take()
			e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
			requests, fromStart := log.take()
			wantStart, wantRequests := 1, 6
			if spoil == "" {
				wantStart, wantRequests = 0, 3
			}
			if fromStart != wantStart || requests != wantRequests {
				t.Errorf("the retry sent %d walk requests, %d from the first id; want %d and %d", requests, fromStart, wantRequests, wantStart)
			}
			e.assertMirrors(t)
		})
	}
}

// killableStore returns a store on a pool of its own and a function that
// terminates that pool's connections but the sync lock's (see
// breakScanRecording).
func killableStore(t *testing.T, e *testEnv) (*warehouse.Store, func()) {
	admin := e.store.Pool()
	app := "usersync-kill-" + e.store.Schema()
	cfg := admin.Config()
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	// Every acquire checks its connection, so the one connection held across
	// the scan (the reconcile's tables) is the only one to meet the
	// termination: the run can still record that it failed.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store, err := warehouse.NewStore(pool, e.store.Schema())
	if err != nil {
		t.Fatal(err)
	}
	return store, func() { // all of the store's connections but the sync lock's
		var n int
		err := admin.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
			FROM pg_stat_activity WHERE application_name = $1
			AND pid NOT IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')`, app).Scan(&n)
		if err != nil || n == 0 {
			t.Errorf("terminating the reconcile's connection: %d terminated, %v", n, err)
		}
	}
}

func mustSim(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
