package syncer_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/usersync/usersync/sync/jsonapi/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestTeamsWithoutData: an API that sends users' teams relationship without
// data. Each sync lists membership team by team, and user_teams matches the
// API. Users created between the users pass and the membership pass are left
// out of user_teams (never a row for a user the warehouse does not hold) and
// arrive, with their teams, in the next sync.
func TestTeamsWithoutData(t *testing.T) {
	t.Parallel()
	var created []int64
	var once sync.Once
	e := newEnvWith(t, apisim.Options{Users: 700, Knobs: apisim.Knobs{TeamsLinksOnly: true}}, func(sim *apisim.Server) http.Handler {
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
	if sum.Inserted != 4 || sum.Membership == nil || sum.Membership.Absent != 0 {
		t.Errorf("incremental sync: inserted %d, membership %+v, want the 4 created users and none absent", sum.Inserted, sum.Membership)
	}
	e.assertMirrors(t)
	if n := e.count(t, orphans); n != 0 {
		t.Errorf("%d user_teams rows of users not in users", n)
	}
}
