package syncer_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// betweenPasses serves the simulator, but while armed it deletes a team, a
// role and a profile for each users request and restores them right after:
// users fetched then come without them, and every dimension list (served
// between two users requests) shows them live. That is a deletion and a
// restore between two dimension passes, which no pass ever sees.
type betweenPasses struct {
	sim                 *apisim.Server
	team, role, profile int64

	mu    sync.Mutex
	armed bool
}

func (b *betweenPasses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.armed || r.URL.Path != "/api/v2/users" {
		b.sim.ServeHTTP(w, r)
		return
	}
	must := func(err error) {
		if err != nil {
			panic(err) // the ids come from the simulator: programmer error
		}
	}
	must(b.sim.Delete("team", b.team))
	must(b.sim.Delete("role", b.role))
	must(b.sim.Delete("profile", b.profile))
	b.sim.ServeHTTP(w, r)
	must(b.sim.Restore("team", b.team))
	must(b.sim.Restore("role", b.role))
	must(b.sim.Restore("profile", b.profile))
}

func (b *betweenPasses) arm(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = on
}

// holders returns the users that hold id in rel.
func holders(users []apisim.Resource, rel string, id int64) []int64 {
	var out []int64
	for _, u := range users {
		if slices.Contains(u.Relationships[rel], id) {
			out = append(out, u.ID)
		}
	}
	return out
}

// TestReconcileRelinksWhatNoPassSawDeleted: a team, a role and a profile are
// deleted and restored between two dimension passes, and users updated
// meanwhile are written without them. No pass marked them deleted, and the
// users' updatedAt will not move again, so only the reconcile's id scan,
// which carries every user's linkage to teams, roles and profiles, shows
// them: one reconcile relinks them all, at no request beyond its scan and
// its fetch by id (one filter[id] request here: fewer than 1000 ids), and
// the next one finds nothing to do. An API that sends users' teams without
// data unless asked to include them gives them to the scan the same way;
// one that also refuses include costs the scan one refused request, and
// its membership comes from the per-team listing, as in every reconcile.
func TestReconcileRelinksWhatNoPassSawDeleted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		knobs apisim.Knobs
	}{
		{name: "teams sent"},
		{name: "teams links only", knobs: apisim.Knobs{TeamsLinksOnly: true}},
		{name: "include refused", knobs: apisim.Knobs{TeamsLinksOnly: true, RefuseInclude: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			relinkAfterWindow(t, tt.knobs)
		})
	}
}

func relinkAfterWindow(t *testing.T, knobs apisim.Knobs) {
	var window *betweenPasses
	e := newEnvWith(t, apisim.Options{Users: 1500, Knobs: knobs}, func(sim *apisim.Server) http.Handler {
		window = &betweenPasses{sim: sim}
		return window
	})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	all := e.sim.Users()
	window.role, window.profile = all[0].Relationships["role"][0], all[1].Relationships["profile"][0]
	window.team = leastUsed(all, "teams")
	var updated []int64
	for _, rel := range []struct {
		name string
		id   int64
	}{{"role", window.role}, {"profile", window.profile}, {"teams", window.team}} {
		ids := holders(all, rel.name, rel.id)
		updated = append(updated, ids[:min(10, len(ids))]...)
	}
	for _, id := range updated {
		if err := e.sim.UpdateUser(id); err != nil {
			t.Fatal(err)
		}
	}
	window.arm(true)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	window.arm(false)

	unlinked := `SELECT count(*) FROM %s.users u WHERE u.id = ANY($1) AND (u.role_id IS NULL OR u.profile_id IS NULL
		OR NOT EXISTS (SELECT FROM %[1]s.user_teams ut WHERE ut.user_id = u.id))`
	if n := e.count(t, unlinked, updated); n == 0 {
		t.Fatal("the users updated between the passes kept their links: this test no longer shows the gap it covers")
	}
	if n := e.count(t, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NOT NULL`) +
		e.count(t, `SELECT count(*) FROM %s.roles WHERE deleted_at IS NOT NULL`) +
		e.count(t, `SELECT count(*) FROM %s.profiles WHERE deleted_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d teams, roles or profiles marked deleted: a pass saw the deletion", n)
	}

	before := e.sim.Stats()
	sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	after := e.sim.Stats()
	e.assertMirrors(t)
	if sum.Relinked == 0 || sum.Stale != 0 || sum.Missing != 0 {
		t.Errorf("relinked %d, stale %d, missing %d: want only relinked users", sum.Relinked, sum.Stale, sum.Missing)
	}
	// The bound: the three dimension lists, the scan's pages, and one
	// filter[id] request per batch of relinked users; nothing per team,
	// role or profile (but the per-team listing of an API that refuses
	// include=teams, and the scan's request it refused).
	users := after.ByEndpoint["GET /api/v2/users"] - before.ByEndpoint["GET /api/v2/users"]
	refused := int64(0)
	if knobs.RefuseInclude {
		refused = 1
	}
	listed := int64(sum.Membership.Teams) // a page each: no team has 1000 members here
	if want := refused + sum.ScanPages + 1 + listed; users != want || sum.FetchPages != 1 {
		t.Errorf("users requests = %d (scan pages %d, fetch pages %d, membership %d), want %d",
			users, sum.ScanPages, sum.FetchPages, listed, want)
	}
	if total := after.Requests - before.Requests; total != users+3 || sum.Requests != total {
		t.Errorf("requests = %d (summary %d), want the users requests and 3 dimension lists: %d", total, sum.Requests, users+3)
	}
	if want := int64((1500 + 999) / 1000); sum.ScanPages != want {
		t.Errorf("scan pages = %d, want %d", sum.ScanPages, want)
	}

	again := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if again.Relinked != 0 || again.FetchPages != 0 {
		t.Errorf("second reconcile: relinked %d, fetch pages %d, want nothing to do", again.Relinked, again.FetchPages)
	}
}
