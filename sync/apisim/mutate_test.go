package apisim

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestUpdateUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 200})
	before := map[int64]Resource{}
	for _, u := range e.sim.Users() {
		before[u.ID] = u
	}
	e.clock.Advance(time.Hour)
	updated := e.sim.UpdateUsers(30)
	if len(updated) != 30 || len(slices.Compact(sorted64(updated))) != 30 {
		t.Fatalf("UpdateUsers(30) = %v", updated)
	}
	changedAttrs := 0
	for _, id := range updated {
		u, _ := e.sim.User(id)
		old := before[id]
		if !updatedAt(u).Equal(e.clock.Now()) {
			t.Errorf("user %d updatedAt %v, want the clock's now", id, updatedAt(u))
		}
		if !createdAt(u).Equal(createdAt(old)) || u.Attributes["email"] != old.Attributes["email"] {
			t.Errorf("user %d: createdAt or email changed", id)
		}
		for name, v := range u.Attributes {
			if name != "updatedAt" && !reflect.DeepEqual(v, old.Attributes[name]) {
				changedAttrs++
			}
		}
	}
	if changedAttrs < 30*5 {
		t.Errorf("only %d attribute changes over 30 updates", changedAttrs)
	}
	// Updating twice in the same millisecond still moves updatedAt.
	if err := e.sim.UpdateUser(updated[0]); err != nil {
		t.Fatal(err)
	}
	u, _ := e.sim.User(updated[0])
	if !updatedAt(u).Equal(e.clock.Now().Add(time.Millisecond)) {
		t.Errorf("second update: updatedAt %v", updatedAt(u))
	}
	if err := e.sim.UpdateUser(999); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateUser(999) = %v", err)
	}
}

func TestCreateAndDeleteUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 100})
	created := e.sim.CreateUsers(3)
	if !slices.Equal(created, []int64{101, 102, 103}) {
		t.Fatalf("CreateUsers(3) = %v", created)
	}
	u, ok := e.sim.User(102)
	if !ok || !createdAt(u).Before(updatedAt(u)) || !updatedAt(u).Equal(testEpoch) {
		t.Errorf("created user: %v %v", u.Attributes["createdAt"], u.Attributes["updatedAt"])
	}
	e.getDoc("/api/v2/users/103", http.StatusOK)

	if err := e.sim.DeleteUser(50); err != nil {
		t.Fatal(err)
	}
	e.getDoc("/api/v2/users/50", http.StatusNotFound)
	all, _ := e.walk("/api/v2/users?page[size]=1000", nil)
	if len(all) != 102 || slices.Contains(ids(t, all), 50) || slices.Contains(e.sim.UserIDs(), 50) {
		t.Errorf("deleted user still listed")
	}
	for _, m := range e.sim.Memberships() {
		if m.UserID == 50 {
			t.Fatal("deleted user still has memberships")
		}
	}
	if err := e.sim.RestoreUser(50); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.sim.User(50); !ok {
		t.Error("restored user missing")
	}
	if err := e.sim.DeleteUser(0); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteUser(0) = %v", err)
	}
}

func TestDeleteTeamRoleProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 300})
	members := func(team int64) []int64 {
		var out []int64
		for _, m := range e.sim.Memberships() {
			if m.TeamID == team {
				out = append(out, m.UserID)
			}
		}
		return out
	}
	team := int64(3)
	was := members(team)
	if len(was) == 0 {
		t.Fatal("team 3 has no members")
	}
	stamp, _ := e.sim.User(was[0])
	if err := e.sim.Delete("team", team); err != nil {
		t.Fatal(err)
	}
	e.getDoc("/api/v2/teams/3", http.StatusNotFound)
	if slices.Contains(truthIDs(e.sim.Resources("team")), team) || len(members(team)) != 0 {
		t.Error("deleted team still listed or has members")
	}
	if got := e.getDoc(q("/api/v2/users", "filter[teams][id]", "3"), http.StatusOK).list(t); len(got) != 0 {
		t.Errorf("filter[teams][id]=3 gives %d users", len(got))
	}
	var served resource
	mustUnmarshal(t, e.getDoc("/api/v2/users/"+itoa(was[0]), http.StatusOK).Data, &served)
	if slices.Contains(served.relIDs(t, "teams"), team) {
		t.Error("a user still shows the deleted team")
	}
	after, _ := e.sim.User(was[0])
	if !updatedAt(after).Equal(updatedAt(stamp)) {
		t.Error("deleting a team touched its members' updatedAt")
	}
	if err := e.sim.Restore("team", team); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(members(team), was) {
		t.Error("restoring the team did not restore its memberships")
	}

	// A deleted role leaves nulls behind, in users and in child roles.
	var role, child int64
	for _, r := range e.sim.Resources("role") {
		if p := r.Relationships["parentRole"]; len(p) == 1 {
			role, child = p[0], r.ID
			break
		}
	}
	if err := e.sim.Delete("role", role); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.sim.Resource("role", child); len(c.Relationships["parentRole"]) != 0 {
		t.Error("child role still points at the deleted parent")
	}
	for _, u := range e.sim.Users() {
		if slices.Contains(u.Relationships["role"], role) {
			t.Fatalf("user %d still has the deleted role", u.ID)
		}
	}
	if err := e.sim.Delete("profile", 2); err != nil {
		t.Fatal(err)
	}
	for _, u := range e.getDoc(q("/api/v2/users", "page[size]", "300"), http.StatusOK).list(t) {
		if slices.Contains(u.relIDs(t, "profile"), 2) {
			t.Fatal("a user still has the deleted profile")
		}
	}
	if err := e.sim.Restore("profile", 2); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Restore("role", role); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{e.sim.Delete("team", 999), e.sim.Delete("role", -1), e.sim.Restore("profile", 50), e.sim.Update("team", 0),
		e.sim.Delete("mailbox", 1), e.sim.Update("user", 1), e.sim.Rename("user", 1, "x")} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	}
	e.clock.Advance(time.Minute)
	if err := e.sim.Update("team", 1); err != nil {
		t.Fatal(err)
	}
	if tm, _ := e.sim.Resource("team", 1); !updatedAt(tm).Equal(e.clock.Now()) {
		t.Errorf("Update(team): updatedAt %v", tm.Attributes["updatedAt"])
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 120, RefreshToken: "rt", Token: "tok"})
	e.token = "tok"
	var bytes int64
	for _, p := range []string{"/api/v2/users?page[size]=100", "/api/v2/users/1", "/api/v2/teams", "/api/v2/users?filter[x]=1", "/nowhere"} {
		bytes += int64(len(e.get(p).body))
	}
	e.token = "bad"
	bytes += int64(len(e.get("/api/v2/roles").body))
	status, _, _ := e.postToken(url1("rt"))
	if status != 200 {
		t.Fatalf("token: %d", status)
	}
	st := e.sim.Stats()
	wantEndpoints := map[string]int64{
		"GET /api/v2/users": 2, "GET /api/v2/users/{id}": 1, "GET /api/v2/teams": 1, "GET /api/v2/roles": 1,
		"other": 1, "POST /oauth/token": 1,
	}
	if !reflect.DeepEqual(st.ByEndpoint, wantEndpoints) {
		t.Errorf("ByEndpoint = %v", st.ByEndpoint)
	}
	if st.Requests != 7 || st.ByStatus[200] != 4 || st.ByStatus[400] != 1 || st.ByStatus[404] != 1 || st.ByStatus[401] != 1 {
		t.Errorf("Requests %d, ByStatus %v", st.Requests, st.ByStatus)
	}
	if st.Bytes <= bytes || st.Resources["user"] != 101 || st.Resources["team"] != 4 || st.Pages != 3 {
		t.Errorf("Bytes %d (API bodies %d), Resources %v, Pages %d", st.Bytes, bytes, st.Resources, st.Pages)
	}
	e.sim.ResetStats()
	if st := e.sim.Stats(); st.Requests != 0 || len(st.ByEndpoint) != 0 || e.sim.TokenGrants() != 1 {
		t.Errorf("after ResetStats: %+v", st)
	}
}

func url1(refresh string) map[string][]string {
	return map[string][]string{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
}

// TestConcurrentReadersAndWriters runs walks, mutations and ground-truth
// reads at once (for the race detector), then checks the keyset promise:
// every user the writer never touched was seen exactly once by every walk.
func TestConcurrentReadersAndWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 400})
	initial := e.sim.UserIDs()
	touchedCh := make(chan map[int64]bool, 1)
	go func() {
		touched := map[int64]bool{}
		for i := range 30 {
			e.clock.Advance(time.Second)
			for _, id := range e.sim.UpdateUsers(5) {
				touched[id] = true
			}
			e.sim.CreateUsers(1)
			_ = e.sim.DeleteUser(int64(i + 1))
			touched[int64(i+1)] = true
			_ = e.sim.Delete("team", int64(i%16+1))
			_ = e.sim.Restore("team", int64((i+8)%16+1))
		}
		touchedCh <- touched
	}()
	sorts := []string{"updatedAt", "-updatedAt", "email"}
	seenCh := make(chan map[int64]int, len(sorts))
	for _, sort := range sorts {
		go func() {
			seen := map[int64]int{}
			// Deferred, so that a failing helper (which ends this goroutine)
			// cannot leave the test waiting.
			defer func() { seenCh <- seen }()
			all, _ := e.walk(q("/api/v2/users", "sort", sort, "page[size]", "50"), nil)
			for _, r := range all {
				seen[r.id(t)]++
			}
		}()
	}
	for range 20 {
		_ = e.sim.Users()
		_ = e.sim.Memberships()
	}
	touched := <-touchedCh
	if len(touched) > 250 {
		t.Fatalf("the writer touched %d users: too few left to check", len(touched))
	}
	for range sorts {
		seen := <-seenCh
		for _, id := range initial {
			if !touched[id] && seen[id] != 1 {
				t.Errorf("untouched user %d seen %d times", id, seen[id])
			}
		}
	}
}
