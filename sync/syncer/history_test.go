package syncer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

var incremental = syncer.Request{Kind: warehouse.KindIncremental}

// interval is one row of user_team_versions or of a dimension's versions.
type interval struct {
	from  time.Time
	to    *time.Time
	ended string // user_team_history.ended_by; "" while open
	name  string // dimensions: the name
	// parent is role_versions.parent_role_id
	parent *int64
}

// memberships returns the membership intervals of user in team, oldest first.
func (e *testEnv) memberships(t *testing.T, user, team int64) []interval {
	t.Helper()
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	rows, err := e.store.Pool().Query(context.Background(), `SELECT v.valid_from, v.valid_to, coalesce(h.ended_by, '')
		FROM `+q+`.user_team_versions v LEFT JOIN `+q+`.user_team_history h
		ON (h.user_id, h.team_id, h.valid_from) = (v.user_id, v.team_id, v.valid_from)
		WHERE v.user_id = $1 AND v.team_id = $2 ORDER BY v.valid_from`, user, team)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (interval, error) {
		var i interval
		return i, r.Scan(&i.from, &i.to, &i.ended)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// roleVersions returns the versions of a role, oldest first.
func (e *testEnv) roleVersions(t *testing.T, role int64) []interval {
	t.Helper()
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	rows, err := e.store.Pool().Query(context.Background(), `SELECT valid_from, valid_to, name, parent_role_id
		FROM `+q+`.role_versions WHERE role_id = $1 ORDER BY valid_from`, role)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (interval, error) {
		var i interval
		return i, r.Scan(&i.from, &i.to, &i.name, &i.parent)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// assertHistorySound checks what every history must satisfy (see
// syncertest.HistoryProblems).
func (e *testEnv) assertHistorySound(t *testing.T) {
	t.Helper()
	for _, p := range syncertest.HistoryProblems(context.Background(), e.store) {
		t.Error(p)
	}
}

// freeTeam returns a team user is not in, false when the user already has
// the most teams a user may have.
func freeTeam(sim *apisim.Server, user int64) (int64, bool) {
	in := map[int64]bool{}
	for _, m := range sim.Memberships() {
		if m.UserID == user {
			in[m.TeamID] = true
		}
	}
	for _, team := range sim.Resources("team") {
		if !in[team.ID] && len(in) < 4 {
			return team.ID, true
		}
	}
	return 0, false
}

// joinable returns the first user from id on that can join a team, and
// that team.
func joinable(t *testing.T, sim *apisim.Server, id int64) (user, team int64) {
	t.Helper()
	for user = id; user < id+100; user++ {
		if team, ok := freeTeam(sim, user); ok {
			return user, team
		}
	}
	t.Fatalf("no user from %d on can join a team", id)
	return 0, 0
}

func setMembership(t *testing.T, sim *apisim.Server, user, team int64, member bool) {
	t.Helper()
	if err := sim.SetMembership(user, team, member); err != nil {
		t.Fatal(err)
	}
}

// TestMembershipHistory: a user added to a team, removed and added again
// has two intervals, the first ended by the removal; a user marked deleted
// has every membership ended by it, and gets them back, as new intervals,
// when it comes back.
func TestMembershipHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 300})
	cfg := syncer.Config{PageSize: 100}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	user, team := joinable(t, e.sim, 17)
	for _, member := range []bool{true, false, true} {
		setMembership(t, e.sim, user, team, member)
		e.run(t, cfg, incremental)
	}
	got := e.memberships(t, user, team)
	if len(got) != 2 || got[0].to == nil || got[0].ended != "removed" || got[1].to != nil || !got[0].to.Before(got[1].from) {
		t.Fatalf("intervals of user %d in team %d: %+v, want one ended by its removal, then an open one", user, team, got)
	}
	before := e.count(t, `SELECT count(*) FROM %s.user_teams WHERE user_id = $1`, user)

	if err := e.sim.DeleteUser(user); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, cfg, syncer.ReconcileRequest{})
	if n := e.count(t, `SELECT count(*) FROM %s.user_teams WHERE user_id = $1`, user); n != 0 {
		t.Errorf("%d memberships of the deleted user left in user_teams", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %[1]s.user_team_history h JOIN %[1]s.users u ON u.id = h.user_id
		WHERE h.user_id = $1 AND h.ended_by = 'user_deleted' AND h.valid_to = u.deleted_at`, user); n != before {
		t.Errorf("%d memberships ended by the deletion, want %d", n, before)
	}
	if err := e.sim.RestoreUser(user); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, cfg, syncer.ReconcileRequest{})
	if n := e.count(t, `SELECT count(*) FROM %s.user_teams WHERE user_id = $1`, user); n != before {
		t.Errorf("%d memberships after the user came back, want %d", n, before)
	}
	got = e.memberships(t, user, team)
	if len(got) != 3 || got[1].ended != "user_deleted" || got[2].to != nil || !got[1].to.Before(got[2].from) {
		t.Errorf("intervals after the deletion and return: %+v, want a third, open, after the deletion", got)
	}
	e.assertMirrors(t)
	e.assertHistorySound(t)
}

// TestTeamDeletedAndRestored: a team marked deleted ends every membership
// in it; when it comes back its members are listed again and open new
// intervals.
func TestTeamDeletedAndRestored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 400})
	cfg := syncer.Config{PageSize: 200}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	team := e.sim.Memberships()[0].TeamID
	members := e.count(t, `SELECT count(*) FROM %s.user_teams WHERE team_id = $1`, team)
	if members == 0 {
		t.Fatal("the team has no member")
	}
	if err := e.sim.Delete("team", team); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	if n := e.count(t, `SELECT count(*) FROM %s.user_teams WHERE team_id = $1`, team); n != 0 {
		t.Errorf("%d memberships of the deleted team left in user_teams", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %[1]s.user_team_history h JOIN %[1]s.teams t ON t.id = h.team_id
		WHERE h.team_id = $1 AND h.ended_by = 'team_deleted' AND h.valid_to = t.deleted_at`, team); n != members {
		t.Errorf("%d memberships ended by the deletion, want %d", n, members)
	}
	if err := e.sim.Restore("team", team); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	if n := e.count(t, `SELECT count(*) FROM %s.user_teams WHERE team_id = $1`, team); n != members {
		t.Errorf("%d members after the team came back, want %d", n, members)
	}
	if n := e.count(t, `SELECT count(DISTINCT user_id) FROM %s.user_team_versions WHERE team_id = $1 AND valid_to IS NULL
		AND valid_from > (SELECT max(valid_to) FROM %[1]s.user_team_history WHERE team_id = $1)`, team); n != members {
		t.Errorf("%d members opened a new interval after the return, want %d", n, members)
	}
	e.assertMirrors(t)
	e.assertHistorySound(t)
}

// TestUserBackThroughAPage: a user marked deleted that comes back in a users
// page (changed since, so an incremental sync fetches it before any
// reconcile) gets its memberships back as new intervals, whether or not its
// teams changed meanwhile.
func TestUserBackThroughAPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 300})
	cfg := syncer.Config{PageSize: 100}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	users := []int64{31, 32, 33, 34, 35, 36, 37, 38}
	for _, id := range users {
		if err := e.sim.DeleteUser(id); err != nil {
			t.Fatal(err)
		}
	}
	e.reconcile(t, cfg, syncer.ReconcileRequest{})
	closed := e.count(t, `SELECT count(*) FROM %s.user_team_history WHERE user_id = ANY($1) AND ended_by = 'user_deleted'`, users)
	if closed == 0 {
		t.Fatal("no membership ended by the deletions")
	}
	for _, id := range users {
		if err := e.sim.RestoreUser(id); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.UpdateUser(id); err != nil { // a quarter of them change teams
			t.Fatal(err)
		}
	}
	e.run(t, cfg, incremental)
	if n := e.count(t, `SELECT count(*) FROM %s.users WHERE id = ANY($1) AND deleted_at IS NOT NULL`, users); n != 0 {
		t.Fatalf("%d users still marked deleted after the page that brought them back", n)
	}
	reopened := e.count(t, `SELECT count(*) FROM %[1]s.user_teams ut WHERE ut.user_id = ANY($1) AND EXISTS (
		SELECT FROM %[1]s.user_team_history h WHERE (h.user_id, h.team_id) = (ut.user_id, ut.team_id) AND h.ended_by = 'user_deleted')`, users)
	t.Logf("%d memberships ended by the deletions, %d open again", closed, reopened)
	if reopened == 0 {
		t.Error("no membership opened again")
	}
	e.assertMirrors(t)
	e.assertHistorySound(t)
}
