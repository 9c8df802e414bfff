package syncer_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestRoleRenamedAndReparented: each change of a role is a new version in
// role_versions, the one before ending where it starts; an unchanged list
// writes nothing; a deletion ends the last version and a return opens one.
func TestRoleRenamedAndReparented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 200})
	cfg := syncer.Config{PageSize: 200}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	role := e.sim.Resources("role")[3].ID
	if err := e.sim.Rename("role", role, "Renamed role"); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	if err := e.sim.SetRoleParent(role, 1); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	got := e.roleVersions(t, role)
	if len(got) != 3 || got[1].name != "Renamed role" || got[2].name != "Renamed role" || got[2].parent == nil || *got[2].parent != 1 ||
		reflect.DeepEqual(got[1].parent, got[2].parent) || got[2].to != nil || !got[0].to.Equal(got[1].from) || !got[1].to.Equal(got[2].from) {
		t.Fatalf("versions of role %d: %+v, want the original, the renamed and the re-parented, each ending where the next starts", role, got)
	}

	written := `SELECT (SELECT count(*) FROM %[1]s.team_history) + (SELECT count(*) FROM %[1]s.role_history)
		+ (SELECT count(*) FROM %[1]s.profile_history) + (SELECT count(*) FROM %[1]s.user_team_history)
		+ (SELECT sum(xmin::text::bigint) FROM %[1]s.roles) + (SELECT sum(xmin::text::bigint) FROM %[1]s.teams)`
	before := e.count(t, written)
	e.run(t, cfg, incremental)
	if after := e.count(t, written); after != before {
		t.Errorf("a sync with nothing changed wrote history or dimension rows")
	}

	if err := e.sim.Delete("role", role); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	if n := e.count(t, `SELECT count(*) FROM %[1]s.role_versions v JOIN %[1]s.roles r ON r.id = v.role_id
		WHERE v.role_id = $1 AND (v.valid_to IS NULL OR v.valid_to > r.deleted_at)`, role); n != 0 {
		t.Errorf("%d versions of the deleted role still open", n)
	}
	if err := e.sim.Restore("role", role); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	if got = e.roleVersions(t, role); len(got) != 4 || got[3].to != nil || !got[2].to.Before(got[3].from) {
		t.Errorf("versions after the role came back: %+v, want the third ended by the deletion and a fourth open", got)
	}
	e.assertHistorySound(t)
}

// history is a warehouse's membership history with its times replaced by
// the step of the scenario that wrote them, so that two warehouses that
// lived the same changes compare equal.
func (e *testEnv) history(t *testing.T, marks []time.Time) map[string]bool {
	t.Helper()
	step := func(at *time.Time) int {
		n := 0
		for at != nil && n < len(marks) && !at.Before(marks[n]) {
			n++
		}
		return n
	}
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	rows, err := e.store.Pool().Query(context.Background(), `SELECT user_id, team_id, valid_from, valid_to FROM `+q+`.user_team_versions`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var user, team int64
	var from time.Time
	var to *time.Time
	_, err = pgx.ForEachRow(rows, []any{&user, &team, &from, &to}, func() error {
		out[fmt.Sprintf("%d/%d %d-%d", user, team, step(&from), step(to))] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMembershipPathsAgree: membership sent with the users (include=teams)
// and membership listed team by team (an API that refuses include=teams)
// give the same history, step by step, through additions, removals, a
// team deleted and restored and a user deleted and restored.
func TestMembershipPathsAgree(t *testing.T) {
	t.Parallel()
	linked := newEnv(t, apisim.Options{Users: 300})
	listed := newEnv(t, apisim.Options{Users: 300, Knobs: apisim.Knobs{TeamsLinksOnly: true, RefuseInclude: true}})
	user, team := joinable(t, linked.sim, 23)
	var gone int64 // a team with members, not team
	for _, m := range linked.sim.Memberships() {
		if m.TeamID != team {
			gone = m.TeamID
			break
		}
	}
	steps := []func(sim *apisim.Server) error{
		func(*apisim.Server) error { return nil },
		func(sim *apisim.Server) error { return sim.SetMembership(user, team, true) },
		func(sim *apisim.Server) error { return sim.SetMembership(user, team, false) },
		func(sim *apisim.Server) error { return sim.Delete("team", gone) },
		func(sim *apisim.Server) error { return sim.SetMembership(user, team, true) },
		func(sim *apisim.Server) error { return sim.Restore("team", gone) },
		func(sim *apisim.Server) error { return sim.DeleteUser(user) },
		func(sim *apisim.Server) error { return sim.RestoreUser(user) },
	}
	cfg := syncer.Config{PageSize: 100}
	var marks [2][]time.Time
	for i, e := range []*testEnv{linked, listed} {
		for _, step := range steps {
			var now time.Time
			if err := e.store.Pool().QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
				t.Fatal(err)
			}
			marks[i] = append(marks[i], now)
			if err := step(e.sim); err != nil {
				t.Fatal(err)
			}
			e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
			e.reconcile(t, cfg, syncer.ReconcileRequest{})
		}
		e.assertMirrors(t)
		e.assertHistorySound(t)
	}
	a, b := linked.history(t, marks[0]), listed.history(t, marks[1])
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the two paths differ: %d intervals with linkage, %d listed", len(a), len(b))
		for k := range a {
			if !b[k] {
				t.Logf("only with linkage: %s", k)
			}
		}
		for k := range b {
			if !a[k] {
				t.Logf("only listed: %s", k)
			}
		}
	}
	// Added, removed; added again, ended by the user's deletion; opened
	// again by its return.
	if got := linked.memberships(t, user, team); len(got) != 3 || got[0].ended != "removed" || got[1].ended != "user_deleted" || got[2].to != nil {
		t.Errorf("user %d in team %d: %+v, want three intervals", user, team, got)
	}
}

// TestHistoryAfterFailedPage: a run that fails part way (a page's
// transaction refused while it ends memberships) and the run that resumes
// it leave one interval per membership change: none repeated, none
// overlapping, and the warehouse mirrors the API.
func TestHistoryAfterFailedPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1200})
	cfg := syncer.Config{PageSize: 100}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	changed := e.sim.UpdateUsers(600) // a quarter of them change teams
	for _, id := range changed[:40] {
		if team, ok := freeTeam(e.sim, id); ok {
			setMembership(t, e.sim, id, team, true)
		}
	}
	// The history refuses to end a membership of the last user changed:
	// its page fails after earlier pages committed.
	victim := changed[len(changed)-1]
	team := e.sim.Memberships()[0].TeamID
	for _, m := range e.sim.Memberships() {
		if m.UserID == victim {
			team = m.TeamID
		}
	}
	if err := e.sim.SetMembership(victim, team, false); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	ctx := context.Background()
	_, err := e.store.Pool().Exec(ctx, fmt.Sprintf(`
		CREATE FUNCTION %[1]s.test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.user_id = %[2]d THEN RAISE EXCEPTION 'test: refusing history of user %%', NEW.user_id; END IF; RETURN NEW; END $$;
		CREATE TRIGGER test_refuse BEFORE INSERT ON %[1]s.user_team_history FOR EACH ROW EXECUTE FUNCTION %[1]s.test_refuse();`, q, victim))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runAlone(t, ctx, e.syncer(cfg), incremental); err == nil {
		t.Fatal("the run succeeded, want the page ending the victim's membership to fail")
	}
	if n := e.count(t, `SELECT pages FROM %s.sync_runs ORDER BY run_id DESC LIMIT 1`); n == 0 {
		t.Fatal("no page committed before the failure: the test proves nothing")
	}
	if _, err := e.store.Pool().Exec(ctx, `DROP TRIGGER test_refuse ON `+q+`.user_team_history`); err != nil {
		t.Fatal(err)
	}
	e.run(t, cfg, incremental)
	e.assertMirrors(t)
	e.assertHistorySound(t)
	if n := e.count(t, `SELECT count(*) FROM %s.user_team_history WHERE user_id = $1 AND team_id = $2 AND ended_by = 'removed'`, victim, team); n != 1 {
		t.Errorf("%d removals of user %d from team %d in the history, want 1", n, victim, team)
	}
}

// TestHistoryProblemsSeesBrokenHistories: the history checks that tests and
// the chaos driver rely on report an interval overlapping an open
// membership, a version ending before it starts and a membership of a
// deleted user.
func TestHistoryProblemsSeesBrokenHistories(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 50})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	if p := syncertest.HistoryProblems(context.Background(), e.store); len(p) != 0 {
		t.Fatalf("a fresh warehouse has history problems: %v", p)
	}
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	for _, sql := range []string{
		`INSERT INTO ` + q + `.user_team_history (user_id, team_id, valid_from, valid_to, ended_by)
			SELECT user_id, team_id, valid_from - interval '1 hour', valid_from + interval '1 second', 'removed' FROM ` + q + `.user_teams LIMIT 1`,
		`INSERT INTO ` + q + `.role_history (role_id, name, raw, valid_from, valid_to) VALUES (999, 'x', '{}', now(), now() - interval '1 day')`,
		`UPDATE ` + q + `.users SET deleted_at = now() WHERE id = (SELECT min(user_id) FROM ` + q + `.user_teams)`,
	} {
		if _, err := e.store.Pool().Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(syncertest.HistoryProblems(context.Background(), e.store), "; ")
	for _, want := range []string{"overlapping intervals in user_team_versions", "empty or reversed intervals in role_versions",
		"memberships of deleted users"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}
