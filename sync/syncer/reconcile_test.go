package syncer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func (e *testEnv) reconcile(t *testing.T, cfg syncer.Config, req syncer.ReconcileRequest) syncer.ReconcileSummary {
	t.Helper()
	sum, err := reconcileAlone(t, context.Background(), e.syncer(cfg), req)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return sum
}

// warehouseMissing returns the simulator's live users that the warehouse
// does not hold live.
func (e *testEnv) warehouseMissing(t *testing.T) []int64 {
	t.Helper()
	var missing []int64
	for _, id := range e.sim.UserIDs() {
		if e.count(t, `SELECT count(*) FROM %s.users WHERE id = $1 AND deleted_at IS NULL`, id) == 0 {
			missing = append(missing, id)
		}
	}
	return missing
}

// TestReconcileFindsSkippedUsers: offset pagination under concurrent
// updates makes a full sync skip users; reconcile finds and loads each one.
func TestReconcileFindsSkippedUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 3000, Knobs: apisim.Knobs{
		OffsetPagination: true, Churn: apisim.Churn{Every: 1, Update: 10, Create: 1},
	}})
	e.run(t, syncer.Config{PageSize: 200}, syncer.Request{Kind: warehouse.KindFull})
	if err := e.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Churn = apisim.Churn{} }); err != nil {
		t.Fatal(err)
	}
	missing := e.warehouseMissing(t)
	if len(missing) == 0 {
		t.Fatal("the full sync skipped no user: the scenario does not exercise reconcile")
	}
	watermark, err := e.store.Runs().Watermark(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	t.Logf("the full sync skipped %d users; reconcile: missing %d, stale %d, fetch pages %d, requests %d",
		len(missing), sum.Missing, sum.Stale, sum.FetchPages, sum.Requests)
	if sum.Missing != int64(len(missing)) || sum.Inserted != int64(len(missing)) {
		t.Errorf("reconcile found %d missing and inserted %d; the sync had skipped %d", sum.Missing, sum.Inserted, len(missing))
	}
	if sum.Deleted != 0 || sum.NotReturned != 0 || sum.Scanned != int64(len(e.sim.UserIDs())) {
		t.Errorf("summary: %+v", sum)
	}
	e.assertMirrors(t)
	if after, _ := e.store.Runs().Watermark(context.Background()); !after.Equal(watermark) {
		t.Errorf("reconcile moved the watermark from %v to %v", watermark, after)
	}
	again := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if again.Missing+again.Stale+again.Relinked+again.Inserted+again.Updated+again.Deleted != 0 {
		t.Errorf("second reconcile still found work: %+v", again)
	}
}

// TestReconcileDeletesAndRestores: users, teams, roles and profiles the API
// no longer returns are marked deleted (users linked to them refreshed);
// when they come back, unchanged, they are unmarked.
func TestReconcileDeletesAndRestores(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1500})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	ctx := context.Background()
	users := []int64{10, 500, 1499}
	// The least used team, role and profile that some user holds: each user
	// pointing at one is fetched again, twice.
	all := e.sim.Users()
	team, role, profile := leastUsed(all, "teams"), leastUsed(all, "role"), leastUsed(all, "profile")
	for _, id := range users {
		if err := e.sim.DeleteUser(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{e.sim.Delete("team", team), e.sim.Delete("role", role), e.sim.Delete("profile", profile)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	versions := e.count(t, `SELECT count(*) FROM %s.user_versions`)

	sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	t.Logf("deleting reconcile: relinked %d, confirmed %d, not returned %d, requests %d", sum.Relinked, sum.Confirmed, sum.NotReturned, sum.Requests)
	if sum.Deleted != 3 || sum.Undeleted != 0 || sum.Relinked == 0 {
		t.Errorf("deleting reconcile: deleted %d, undeleted %d, relinked %d", sum.Deleted, sum.Undeleted, sum.Relinked)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users WHERE deleted_at IS NOT NULL AND id = ANY($1)`, users); n != 3 {
		t.Errorf("%d of the deleted users marked", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users WHERE deleted_at IS NOT NULL`); n != 3 {
		t.Errorf("%d users marked deleted, want 3", n)
	}
	for table, id := range map[string]int64{"teams": team, "roles": role, "profiles": profile} {
		if n := e.count(t, `SELECT count(*) FROM %s.`+table+` WHERE id = $1 AND deleted_at IS NOT NULL`, id); n != 1 {
			t.Errorf("%s %d not marked deleted", table, id)
		}
	}
	e.assertMirrors(t)

	for _, id := range users {
		if err := e.sim.RestoreUser(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{e.sim.Restore("team", team), e.sim.Restore("role", role), e.sim.Restore("profile", profile)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	relinked := sum.Relinked
	sum = e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	t.Logf("restoring reconcile: relinked %d, requests %d", sum.Relinked, sum.Requests)
	if sum.Undeleted != 3 || sum.Deleted != 0 || sum.Relinked == 0 || sum.Relinked > relinked {
		t.Errorf("restoring reconcile: undeleted %d, deleted %d, relinked %d (at most %d back)", sum.Undeleted, sum.Deleted, sum.Relinked, relinked)
	}
	if want := map[string]int64{"teams": 1, "roles": 1, "profiles": 1}; fmt.Sprint(sum.DimensionsUndeleted) != fmt.Sprint(want) {
		t.Errorf("dimensions undeleted = %v, want %v", sum.DimensionsUndeleted, want)
	}
	for _, table := range []string{"users", "teams", "roles", "profiles"} {
		if n := e.count(t, `SELECT count(*) FROM %s.`+table+` WHERE deleted_at IS NOT NULL`); n != 0 {
			t.Errorf("%d %s still marked deleted", n, table)
		}
	}
	e.assertMirrors(t)
	// The users came back unchanged: no version for them; the relinked
	// users got one when their role, profile or team vanished and one when
	// it came back.
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions WHERE user_id = ANY($1)`, users); n != 3 {
		t.Errorf("restored users have %d versions, want 3", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions`); n > versions+2*relinked {
		t.Errorf("versions %d → %d, more than 2 per relinked user (%d)", versions, n, relinked)
	}
	var runs []string
	rows, err := e.store.Pool().Query(ctx, fmt.Sprintf(`SELECT format('%%s %%s %%s %%s %%s', status, deleted, undeleted, summary->>'deleted', summary->>'undeleted')
		FROM %q.sync_runs WHERE kind = 'reconcile' ORDER BY run_id`, e.store.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, s)
	}
	if want := []string{"succeeded 3 0 3 0", "succeeded 0 3 0 3"}; fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("reconcile runs = %q, want %q", runs, want)
	}
}

// TestReconcileRelinksWhatASyncRestored: a role and a profile deleted, seen
// by a reconcile (their holders fetched again, now holding none), then
// restored: the API links their holders again without moving their
// updatedAt, and a sync's dimension pass unmarks them. The next reconcile
// still relinks their users (its scan shows the linkage), though its own
// pass restored nothing, and so does a reconcile after one that restored
// them and failed.
func TestReconcileRelinksWhatASyncRestored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1500})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	all := e.sim.Users()
	role, profile := leastUsed(all, "role"), leastUsed(all, "profile")
	for _, err := range []error{e.sim.Delete("role", role), e.sim.Delete("profile", profile)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{}); sum.Relinked == 0 {
		t.Fatalf("the deleting reconcile relinked nobody: %+v", sum)
	}
	holders := `SELECT count(*) FROM %s.users WHERE role_id = $1 OR profile_id = $2`
	if n := e.count(t, holders, role, profile); n != 0 {
		t.Fatalf("%d users still hold the deleted role or profile", n)
	}
	for _, err := range []error{e.sim.Restore("role", role), e.sim.Restore("profile", profile)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if n := e.count(t, `SELECT count(*) FROM %s.roles WHERE id = $1 AND deleted_at IS NULL`, role); n != 1 {
		t.Fatalf("the sync did not bring role %d back", role)
	}
	if n := e.count(t, holders, role, profile); n != 0 {
		t.Fatalf("the sync relinked %d users: this test no longer shows the gap it covers", n)
	}

	sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if want := map[string]int64{"profiles": 1, "roles": 1}; fmt.Sprint(sum.DimensionsUndeleted) != fmt.Sprint(want) {
		t.Errorf("dimensions undeleted = %v, want %v", sum.DimensionsUndeleted, want)
	}
	if sum.Relinked == 0 {
		t.Errorf("the reconcile after the restoring sync relinked nobody")
	}
	e.assertMirrors(t)
	// Relinked once: the next reconcile finds nothing back.
	if again := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{}); len(again.DimensionsUndeleted) != 0 || again.Relinked != 0 {
		t.Errorf("second reconcile: undeleted %v, relinked %d", again.DimensionsUndeleted, again.Relinked)
	}

	// The role deleted again, then restored by a reconcile that fails after
	// its dimension pass: 100 of 1500 users gone is over the 5% valve.
	if err := e.sim.Delete("role", role); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if err := e.sim.Restore("role", role); err != nil {
		t.Fatal(err)
	}
	gone := make([]int64, 0, 100)
	for _, u := range all {
		if len(gone) < cap(gone) && !slices.Contains(u.Relationships["role"], role) {
			gone = append(gone, u.ID)
		}
	}
	for _, id := range gone {
		if err := e.sim.DeleteUser(id); err != nil {
			t.Fatal(err)
		}
	}
	_, err := reconcileAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.ReconcileRequest{})
	if valve := (*syncer.SafetyValveError)(nil); !errors.As(err, &valve) {
		t.Fatalf("reconcile with %d users gone: %v, want the safety valve", len(gone), err)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.roles WHERE id = $1 AND deleted_at IS NULL`, role); n != 1 {
		t.Fatalf("the failed reconcile did not bring role %d back", role)
	}
	for _, id := range gone {
		if err := e.sim.RestoreUser(id); err != nil {
			t.Fatal(err)
		}
	}
	sum = e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if want := map[string]int64{"roles": 1}; fmt.Sprint(sum.DimensionsUndeleted) != fmt.Sprint(want) {
		t.Errorf("after a failed reconcile: dimensions undeleted = %v, want %v", sum.DimensionsUndeleted, want)
	}
	e.assertMirrors(t)
}

// leastUsed returns the related id that the fewest users hold in rel.
func leastUsed(users []apisim.Resource, rel string) int64 {
	holders := map[int64]int{}
	for _, u := range users {
		for _, id := range u.Relationships[rel] {
			holders[id]++
		}
	}
	best := int64(0)
	for id, n := range holders {
		if best == 0 || n < holders[best] || n == holders[best] && id < best {
			best = id
		}
	}
	return best
}

// truncatingAPI serves the simulator but ends the reconcile's id scan after
// its first page: the page comes without links.next, as if the list ended.
func truncatingAPI(sim *apisim.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/users" || !strings.HasPrefix(r.URL.Query().Get("fields[user]"), "updatedAt,") {
			sim.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, r)
		var doc map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		if links, ok := doc["links"].(map[string]any); ok {
			delete(links, "next")
		}
		w.Header().Set("Content-Type", jsonapi.MediaType)
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// TestReconcileSafetyValve: a scan that lists far fewer users than the
// warehouse holds (most deleted, empty, truncated) stops with a
// *SafetyValveError; a scan that fails stops with its error; either way
// nothing is marked deleted.
func TestReconcileSafetyValve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, e *testEnv) syncer.Config
		share float64
		valve *syncer.SafetyValveError // nil: another error
		// wantErr, when set, is part of the error the reconcile must return.
		wantErr string
		// thenShare, when set, reconciles again allowing that share.
		thenShare   float64
		thenDeleted int64
	}{
		{name: "most users deleted", setup: deleteUsers(1, 600),
			valve:     &syncer.SafetyValveError{WouldDelete: 600, Live: 1000, Scanned: 400, Share: 0.6, MaxShare: 0.05},
			thenShare: 0.7, thenDeleted: 600},
		{name: "empty scan", setup: deleteUsers(1, 1000), share: 1,
			valve: &syncer.SafetyValveError{WouldDelete: 1000, Live: 1000, Scanned: 0, Share: 1, MaxShare: 1}},
		{name: "truncated scan", setup: func(t *testing.T, e *testEnv) syncer.Config {
			if err := e.sim.UpdateKnobs(func(k *apisim.Knobs) { k.PageSizeCap = 200 }); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(truncatingAPI(e.sim))
			t.Cleanup(srv.Close)
			e.client = newClient(t, srv.URL, jsonapi.StaticToken("test-token"))
			return syncer.Config{}
		}, valve: &syncer.SafetyValveError{WouldDelete: 800, Live: 1000, Scanned: 200, Share: 0.8, MaxShare: 0.05}},
		{name: "scan not recorded", setup: breakScanRecording, wantErr: "scanning user ids: recording scan page 2: ",
			thenShare: syncer.DefaultMaxDeleteShare},
		{name: "scan killed by a 400", setup: func(t *testing.T, e *testEnv) syncer.Config {
			if err := e.sim.UpdateKnobs(func(k *apisim.Knobs) { k.PageSizeCap = 100 }); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			return syncer.Config{Prefetch: 1, Progress: func(p syncer.Progress) {
				once.Do(func() { e.sim.FailNext(1, http.StatusBadRequest) })
			}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, apisim.Options{Users: 1000})
			e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
			cfg := tt.setup(t, e)
			_, err := reconcileAlone(t, context.Background(), e.syncer(cfg), syncer.ReconcileRequest{MaxDeleteShare: tt.share})
			var valve *syncer.SafetyValveError
			switch {
			case err == nil:
				t.Fatal("reconcile succeeded")
			case tt.valve != nil && !errors.As(err, &valve):
				t.Fatalf("reconcile: %v, want a *SafetyValveError", err)
			case tt.valve != nil && *valve != *tt.valve:
				t.Errorf("safety valve = %+v, want %+v", *valve, *tt.valve)
			case tt.valve == nil && errors.As(err, &valve):
				t.Errorf("reconcile: %v, want the scan's error", err)
			case !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("reconcile: %v, want an error with %q", err, tt.wantErr)
			}
			if n := e.count(t, `SELECT count(*) FROM %s.users WHERE deleted_at IS NOT NULL`); n != 0 {
				t.Errorf("%d users marked deleted by a refused reconcile", n)
			}
			if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE kind = 'reconcile' AND status = 'failed' AND error <> ''`); n != 1 {
				t.Error("the refused reconcile is not recorded as failed")
			}
			if tt.thenShare == 0 {
				return
			}
			sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{MaxDeleteShare: tt.thenShare})
			if sum.Deleted != tt.thenDeleted {
				t.Errorf("with a share of %v: deleted %d, want %d", tt.thenShare, sum.Deleted, tt.thenDeleted)
			}
			e.assertMirrors(t)
		})
	}
}

// breakScanRecording makes the database fail a reconcile's scan while the API
// still has pages to give: once the first scan page is recorded, the run's
// connections but the sync lock's are terminated (the one holding the
// reconcile's tables among them), so recording the second fails. The run must end there and leave nothing of its walk
// running (reconcileAlone checks it).
func breakScanRecording(t *testing.T, e *testEnv) syncer.Config {
	if err := e.sim.UpdateKnobs(func(k *apisim.Knobs) { k.PageSizeCap = 100 }); err != nil {
		t.Fatal(err)
	}
	store, kill := killableStore(t, e)
	e.store = store
	var once sync.Once
	return syncer.Config{Progress: func(syncer.Progress) { once.Do(kill) }}
}

func deleteUsers(from, to int64) func(t *testing.T, e *testEnv) syncer.Config {
	return func(t *testing.T, e *testEnv) syncer.Config {
		for id := from; id <= to; id++ {
			if err := e.sim.DeleteUser(id); err != nil {
				t.Fatal(err)
			}
		}
		return syncer.Config{}
	}
}

// TestReconcileExactWarehouse: over a warehouse that already mirrors the
// API, a reconcile writes nothing and sends only the id scan and the three
// dimension lists, plus one membership page per team when asked to list
// membership.
func TestReconcileExactWarehouse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 2500})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	versions := e.count(t, `SELECT count(*) FROM %s.user_versions`)
	var synced time.Time
	if err := e.store.Pool().QueryRow(context.Background(), fmt.Sprintf(`SELECT greatest(
		(SELECT max(synced_at) FROM %[1]q.users), (SELECT max(synced_at) FROM %[1]q.user_teams),
		(SELECT max(synced_at) FROM %[1]q.user_relationships), (SELECT max(synced_at) FROM %[1]q.teams),
		(SELECT max(synced_at) FROM %[1]q.roles), (SELECT max(synced_at) FROM %[1]q.profiles))`, e.store.Schema())).Scan(&synced); err != nil {
		t.Fatal(err)
	}
	teams := int64(len(e.sim.Resources("team")))
	e.sim.ResetStats()

	sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{Membership: syncer.MembershipAlways})
	t.Logf("exact warehouse: %d requests, %v", sum.Requests, sum.Duration)
	scanPages := int64(3) // 2500 ids, 1000 a page
	want := scanPages + 3 + teams
	if sum.Requests != want || e.sim.Stats().Requests != want {
		t.Errorf("requests: summary %d, simulator %d; want %d (%d scan pages, 3 dimension lists, %d teams)",
			sum.Requests, e.sim.Stats().Requests, want, scanPages, teams)
	}
	if got := e.sim.Stats().ByEndpoint["GET /api/v2/users"]; got != scanPages+teams {
		t.Errorf("users requests = %d, want %d", got, scanPages+teams)
	}
	if sum.Scanned != 2500 || sum.ScanPages != scanPages {
		t.Errorf("scanned %d ids in %d pages", sum.Scanned, sum.ScanPages)
	}
	wrote := []int64{sum.Missing, sum.Stale, sum.Relinked, sum.Confirmed, sum.FetchPages, sum.Inserted, sum.Updated,
		sum.Versions, sum.Deleted, sum.Undeleted, sum.Membership.Added, sum.Membership.Removed}
	for _, n := range wrote {
		if n != 0 {
			t.Fatalf("a reconcile of an exact warehouse did something: %+v", sum)
		}
	}
	for name, c := range sum.Dimensions {
		if c.Inserted+c.Updated+c.Deleted != 0 {
			t.Errorf("%s written: %+v", name, c)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions`); n != versions {
		t.Errorf("versions %d → %d", versions, n)
	}
	for _, table := range []string{"users", "user_teams", "user_relationships", "teams", "roles", "profiles"} {
		if n := e.count(t, `SELECT count(*) FROM %s.`+table+` WHERE synced_at > $1`, synced); n != 0 {
			t.Errorf("%d %s rows rewritten", n, table)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE kind = 'reconcile' AND status = 'succeeded' AND requests = $1`, want); n != 1 {
		t.Error("the reconcile run is not recorded with its requests")
	}
	// The default lists membership only when syncs had to: users carry
	// their teams here, so only the scan and the dimension lists are sent.
	e.sim.ResetStats()
	sum = e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if want := scanPages + 3; sum.Requests != want || e.sim.Stats().Requests != want {
		t.Errorf("default reconcile: %d requests (simulator %d), want %d", sum.Requests, e.sim.Stats().Requests, want)
	}
	if sum.Membership.Teams != 0 || sum.Inserted+sum.Updated+sum.Deleted != 0 {
		t.Errorf("default reconcile: %+v", sum)
	}
}

// bigIDAPI serves users with 19-digit ids: the id scan in pages of 1000, and
// fetches by id, recording the request line of each fetch.
type bigIDAPI struct {
	ids   []int64
	mu    sync.Mutex
	lines []int // request-line length of each fetch by id
	asked int   // ids asked for by id
}

func (a *bigIDAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", jsonapi.MediaType)
	q := r.URL.Query()
	var buf bytes.Buffer
	user := func(id int64) {
		if buf.Len() > len(`{"data":[`) {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"id":%d,"type":"user","attributes":{"title":"t","updatedAt":"2024-01-01T00:00:00.000Z"}}`, id)
	}
	buf.WriteString(`{"data":[`)
	switch {
	case r.URL.Path != "/api/v2/users":
		// teams, roles and profiles: none
	case q.Get("filter[id]") != "":
		ids := strings.Split(q.Get("filter[id]"), ",")
		a.mu.Lock()
		a.lines = append(a.lines, len(r.Method)+1+len(r.RequestURI)+1+len(r.Proto))
		a.asked += len(ids)
		a.mu.Unlock()
		for _, s := range ids {
			id, _ := strconv.ParseInt(s, 10, 64)
			user(id)
		}
	default:
		start, _ := strconv.Atoi(q.Get("page[after]"))
		end := min(start+1000, len(a.ids))
		for _, id := range a.ids[start:end] {
			user(id)
		}
		buf.WriteString("]")
		if end < len(a.ids) {
			q.Set("page[after]", strconv.Itoa(end))
			next := (&url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}).String()
			fmt.Fprintf(&buf, `,"links":{"next":%q}`, next)
		}
		buf.WriteString("}")
		_, _ = w.Write(buf.Bytes())
		return
	}
	buf.WriteString("]}")
	_, _ = w.Write(buf.Bytes())
}

// TestReconcileRequestLineLength: fetching thousands of 19-digit ids splits
// them into batches whose request line stays under 8 KB.
func TestReconcileRequestLineLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1})
	api := &bigIDAPI{}
	for i := range int64(3000) {
		api.ids = append(api.ids, 9_100_000_000_000_000_000+i*7919)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	e.client = newClient(t, srv.URL, jsonapi.StaticToken("test-token"))

	sum := e.reconcile(t, syncer.Config{}, syncer.ReconcileRequest{})
	if sum.Missing != 3000 || sum.Inserted != 3000 || sum.NotReturned != 0 {
		t.Errorf("summary: %+v", sum)
	}
	if api.asked != 3000 || int64(len(api.lines)) != sum.FetchPages {
		t.Errorf("%d ids asked in %d requests (summary: %d pages)", api.asked, len(api.lines), sum.FetchPages)
	}
	t.Logf("3000 ids fetched in %d requests, longest request line %d bytes", len(api.lines), slices.Max(api.lines))
	// 19 digits and an encoded comma per id: about 270 ids a request.
	if len(api.lines) < 3000*22/syncer.DefaultMaxRequestLine {
		t.Errorf("only %d fetch requests: batches were not split by length", len(api.lines))
	}
	for i, n := range api.lines {
		if n > syncer.DefaultMaxRequestLine || n >= 8<<10 {
			t.Errorf("fetch %d: request line of %d bytes", i, n)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users WHERE id >= 9100000000000000000`); n != 3000 {
		t.Errorf("warehouse holds %d of the 3000 users", n)
	}
}

// TestReconcileSharesTheSyncLock: a reconcile does not start while a sync
// holds the lock.
func TestReconcileSharesTheSyncLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 10})
	lock, err := e.store.TryLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := reconcileAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.ReconcileRequest{}); !errors.Is(err, warehouse.ErrLocked) {
		t.Errorf("reconcile under a held lock: %v, want ErrLocked", err)
	}
	if _, err := reconcileAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.ReconcileRequest{MaxDeleteShare: 2}); err == nil || errors.Is(err, warehouse.ErrLocked) {
		t.Errorf("reconcile with a share of 2: %v, want a configuration error", err)
	}
}
