package syncer_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// teamIndexExists reports whether user_teams has its team_id index, valid.
func (e *testEnv) teamIndexExists(t *testing.T) bool {
	t.Helper()
	exists, err := e.queryTeamIndex()
	if err != nil {
		t.Fatal(err)
	}
	return exists
}

// queryTeamIndex is teamIndexExists for a goroutine other than the test's,
// which must not call t.Fatal.
func (e *testEnv) queryTeamIndex() (bool, error) {
	var exists bool
	err := e.store.Pool().QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM pg_index
		WHERE indexrelid = to_regclass($1) AND indisvalid)`, pgx.Identifier{e.store.Schema(), "user_teams_team_id"}.Sanitize()).Scan(&exists)
	return exists, err
}

// TestInitialLoadDefersTeamIndex: an initial load writes user_teams without
// its team_id index and builds it when the walk ends; a later sync keeps
// it throughout; a sync that finds it missing (a load that died) builds it
// before its walk, and so does a reconcile.
func TestInitialLoadDefersTeamIndex(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	var during atomic.Int32 // 1: index absent at the 3rd users request, 2: present, 3: the query failed
	var e *testEnv
	e = newEnvWith(t, apisim.Options{Users: 500}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v2/users" && requests.Add(1) == 3 {
				switch exists, err := e.queryTeamIndex(); {
				case err != nil:
					during.Store(3)
				case exists:
					during.Store(2)
				default:
					during.Store(1)
				}
			}
			sim.ServeHTTP(w, r)
		})
	})
	cfg := syncer.Config{PageSize: 100}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	if during.Load() != 1 {
		t.Errorf("initial load: the team_id index was there mid-walk (state %d), want it deferred", during.Load())
	}
	if !e.teamIndexExists(t) {
		t.Fatal("initial load: no team_id index after the run")
	}
	e.assertMirrors(t)

	requests.Store(0)
	e.sim.UpdateUsers(50)
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	if during.Load() != 2 {
		t.Errorf("second sync: state %d, want the team_id index kept throughout", during.Load())
	}

	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	if _, err := e.store.Pool().Exec(context.Background(), `DROP INDEX `+q+`.user_teams_team_id`); err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	if during.Load() != 2 || !e.teamIndexExists(t) {
		t.Errorf("sync after a lost index: state %d, index %v; want it built before the walk", during.Load(), e.teamIndexExists(t))
	}
	e.assertMirrors(t)

	if _, err := e.store.Pool().Exec(context.Background(), `DROP INDEX `+q+`.user_teams_team_id`); err != nil {
		t.Fatal(err)
	}
	if _, err := reconcileAlone(t, context.Background(), e.syncer(cfg), syncer.ReconcileRequest{}); err != nil {
		t.Fatal(err)
	}
	if !e.teamIndexExists(t) {
		t.Error("reconcile after a lost index: no team_id index")
	}
}

// TestFailedInitialLoadBuildsTeamIndex: an initial load that fails part way
// still leaves user_teams with its index.
func TestFailedInitialLoadBuildsTeamIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 500})
	pages := e.walkIDs(t, 100)
	e.onInsert(t, pages[2][0], 0, true)
	if _, err := runAlone(t, context.Background(), e.syncer(syncer.Config{PageSize: 100}), syncer.Request{Kind: warehouse.KindFull}); err == nil {
		t.Fatal("the load did not fail")
	}
	if !e.teamIndexExists(t) {
		t.Error("no team_id index after the failed load")
	}
}
