package syncer_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestTeamsWithoutData: an API that sends users' teams relationship without
// data and refuses include=teams. A full sync lists membership team by team,
// and user_teams matches the
// API. Users created between the users pass and the membership pass are left
// out of user_teams (never a row for a user the warehouse does not hold) and
// arrive, with their teams, in the next sync.
func TestTeamsWithoutData(t *testing.T) {
	t.Parallel()
	var created []int64
	var once sync.Once
	e := newEnvWith(t, apisim.Options{Users: 700, Knobs: apisim.Knobs{TeamsLinksOnly: true, RefuseInclude: true}}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("filter[teams][id]") {
				once.Do(func() { created = sim.CreateUsers(4) })
			}
			sim.ServeHTTP(w, r)
		})
	})
	orphans := `SELECT count(*) FROM %[1]s.user_teams ut WHERE NOT EXISTS (SELECT 1 FROM %[1]s.users u WHERE u.id = ut.user_id)`

	sum := e.run(t, syncer.Config{PageSize: 200}, syncer.Request{Kind: warehouse.KindFull})
	m := sum.Membership
	if m == nil || m.Teams == 0 || m.Added == 0 || m.Absent == 0 {
		t.Fatalf("full sync: membership %+v, want teams listed, rows added and the created users absent", m)
	}
	if len(created) != 4 {
		t.Fatalf("%d users created during the membership pass, want 4", len(created))
	}
	if n := e.count(t, orphans); n != 0 {
		t.Errorf("%d user_teams rows of users not in users", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users`); n != 700 {
		t.Errorf("%d users after the full sync, want 700", n)
	}

	e.sim.UpdateUsers(120) // a quarter of them change teams
	sum = e.run(t, syncer.Config{PageSize: 200}, syncer.Request{Kind: warehouse.KindIncremental})
	if sum.Inserted != 4 || sum.Membership == nil || sum.Membership.Deferred != 124 || sum.Membership.Teams != 0 {
		t.Errorf("incremental sync: inserted %d, membership %+v, want the 4 created users and 124 deferred, no team listed", sum.Inserted, sum.Membership)
	}
	rec, err := reconcileAlone(t, context.Background(), e.syncer(syncer.Config{PageSize: 200}), syncer.ReconcileRequest{})
	if err != nil || rec.Membership.Teams == 0 {
		t.Fatalf("reconcile: %v, membership %+v; want every team listed", err, rec.Membership)
	}
	e.assertMirrors(t)
	if n := e.count(t, orphans); n != 0 {
		t.Errorf("%d user_teams rows of users not in users", n)
	}
}

// TestTeamsLinksOnlyCost: an API that sends users' teams as links only but
// honours include=teams. Syncs and reconciles get every user's team ids from
// the users pages themselves: an incremental sync costs the dimension pages
// plus 2 x its users pages plus 6 requests at most, a reconcile 2 x the
// users pages plus the dimension pages plus 6, no team is listed, and
// user_teams is exact, also after users changed teams.
func TestTeamsLinksOnlyCost(t *testing.T) {
	t.Parallel()
	const users, pageSize, teams = 3000, 1000, 130
	e := newEnv(t, apisim.Options{Users: users, Teams: teams, Knobs: apisim.Knobs{TeamsLinksOnly: true}})
	cfg := syncer.Config{PageSize: pageSize}
	pages := func(n int) int64 { return int64((n + pageSize - 1) / pageSize) }
	dimPages := int64(3) // teams, roles, profiles: one page each at this size
	sum := e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	if sum.Membership != nil {
		t.Errorf("full sync listed membership: %+v", sum.Membership)
	}
	e.assertMirrors(t)

	e.sim.UpdateUsers(40) // some change teams
	before := e.sim.Stats().Requests
	sum = e.run(t, cfg, syncer.Request{Kind: warehouse.KindIncremental})
	got, bound := e.sim.Stats().Requests-before, dimPages+2*pages(40)+6
	t.Logf("incremental sync after 40 updates, %d teams, links only: %d requests (bound %d)", teams, got, bound)
	if got > bound || sum.Membership != nil {
		t.Errorf("incremental sync: %d requests (bound %d), membership %+v", got, bound, sum.Membership)
	}
	e.assertMirrors(t)

	before = e.sim.Stats().Requests
	rec, err := reconcileAlone(t, context.Background(), e.syncer(cfg), syncer.ReconcileRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, bound = e.sim.Stats().Requests-before, 2*pages(users)+dimPages+6
	t.Logf("reconcile of %d users, %d teams, links only: %d requests (bound %d)", users, teams, got, bound)
	if got > bound || rec.Membership.Teams != 0 {
		t.Errorf("reconcile: %d requests (bound %d), membership %+v", got, bound, rec.Membership)
	}
	e.assertMirrors(t)
}
