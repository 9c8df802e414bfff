package syncer_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// TestFullThenIncremental: a full sync, then mutations, then an incremental
// sync: the warehouse equals the simulator, attribute by attribute.
func TestFullThenIncremental(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 2500})
	sum := e.run(t, syncer.Config{PageSize: 1000}, syncer.Request{Kind: warehouse.KindFull})
	if sum.Inserted != 2500 || sum.Pages != 3 || sum.Quarantined != 0 {
		t.Errorf("full sync summary: %+v", sum)
	}
	e.assertMirrors(t)

	e.sim.UpdateUsers(40)
	e.sim.CreateUsers(10)
	sum = e.run(t, syncer.Config{PageSize: 1000}, syncer.Request{Kind: warehouse.KindIncremental})
	if sum.Inserted != 10 || sum.Updated != 40 {
		t.Errorf("incremental summary: inserted %d updated %d (want 10, 40): %+v", sum.Inserted, sum.Updated, sum)
	}
	if sum.Versions != 50 {
		t.Errorf("versions written = %d, want 50", sum.Versions)
	}
	e.assertMirrors(t)
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions`); n != 2510+40 {
		t.Errorf("user_versions rows = %d, want %d", n, 2510+40)
	}
}

// TestStatisticsAfterLargeRun: a run that writes as many users as
// autovacuum's threshold (50 plus a tenth of the table) refreshes the
// planner's statistics, so what follows (a snapshot of users_current) is not
// planned for empty tables, users' from a small sample; a smaller run leaves
// them to autovacuum.
func TestStatisticsAfterLargeRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1500})
	analyzed := `SELECT count(*) FROM pg_stat_user_tables WHERE '"' || schemaname || '"' = '%s' AND relname IN ('users', 'user_teams', 'teams') AND last_analyze IS NOT NULL`
	// When users was last analyzed other than by autovacuum, in microseconds
	// since the epoch (0: never).
	usersAnalyzed := `SELECT coalesce((extract(epoch FROM last_analyze) * 1e6)::bigint, 0) FROM pg_stat_user_tables WHERE '"' || schemaname || '"' = '%s' AND relname = 'users'`
	e.run(t, syncer.Config{PageSize: 1000}, syncer.Request{Kind: warehouse.KindFull})
	if n := e.count(t, analyzed); n != 3 {
		t.Errorf("%d of users, user_teams and teams analyzed after a full sync of 1500 users, want 3", n)
	}
	if n := e.count(t, `SELECT reltuples::bigint FROM pg_class WHERE oid = '%s.users'::regclass`); n < 1000 {
		t.Errorf("the planner estimates %d users after the full sync", n)
	}
	// 1500 distinct updatedAt: 101 bounds at the default target (100), 11
	// at the sync's (10); user_teams keeps the default.
	bounds := `SELECT coalesce(max(cardinality(histogram_bounds::text::text[])), 0) FROM pg_stats WHERE '"' || schemaname || '"' = '%s' AND tablename = $1 AND attname = $2`
	if n := e.count(t, bounds, "users", "updated_at"); n < 2 || n > 11 {
		t.Errorf("users.updated_at has %d histogram bounds after the full sync, want 2 to 11 (statistics target 10)", n)
	}
	if n := e.count(t, bounds, "user_teams", "user_id"); n <= 11 {
		t.Errorf("user_teams.user_id has %d histogram bounds after the full sync, want the default target's (over 11)", n)
	}

	before := e.count(t, usersAnalyzed)
	e.sim.UpdateUsers(30)
	if sum := e.run(t, syncer.Config{PageSize: 1000}, syncer.Request{Kind: warehouse.KindIncremental}); sum.Updated != 30 {
		t.Fatalf("updated %d users, want 30", sum.Updated)
	}
	if after := e.count(t, usersAnalyzed); after != before {
		t.Errorf("30 users of 1500 changed (under autovacuum's 200): analyzed anyway")
	}
	e.sim.UpdateUsers(300)
	if sum := e.run(t, syncer.Config{PageSize: 1000}, syncer.Request{Kind: warehouse.KindIncremental}); sum.Updated != 300 {
		t.Fatalf("updated %d users, want 300", sum.Updated)
	}
	if after := e.count(t, usersAnalyzed); after <= before {
		t.Errorf("300 users of 1500 changed (over autovacuum's 200): not analyzed")
	}
}

// TestNoOpIncremental: with nothing changed, an incremental sync sends the
// dimension lists plus one users page, and writes no row and no version.
func TestNoOpIncremental(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1200})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	before := e.count(t, `SELECT count(*) FROM %s.user_versions`)
	syncedAt := e.count(t, `SELECT count(*) FROM %s.users WHERE synced_at < now()`)
	sum := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	// 3 dimension lists (one page each) + 1 users page.
	if sum.Requests != 4 {
		t.Errorf("no-op incremental sent %d requests, want 4", sum.Requests)
	}
	if sum.Inserted != 0 || sum.Updated != 0 || sum.Versions != 0 {
		t.Errorf("no-op incremental wrote: %+v", sum)
	}
	for name, c := range sum.Dimensions {
		if c.Inserted+c.Updated+c.Deleted != 0 {
			t.Errorf("%s written: %+v", name, c)
		}
	}
	if after := e.count(t, `SELECT count(*) FROM %s.user_versions`); after != before {
		t.Errorf("versions %d → %d", before, after)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users WHERE synced_at < now()`); n != syncedAt {
		t.Errorf("rows rewritten: %d of %d kept their synced_at", n, syncedAt)
	}
}

// TestTiesAcrossPages: hundreds of users share one updatedAt, spanning
// pages; some of them change between runs at that same instant's neighbours.
func TestTiesAcrossPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1500, IdenticalTimestamps: 700})
	e.run(t, syncer.Config{PageSize: 200}, syncer.Request{Kind: warehouse.KindFull})
	e.assertMirrors(t)
	e.sim.UpdateUsers(30)
	e.run(t, syncer.Config{PageSize: 200}, syncer.Request{Kind: warehouse.KindIncremental})
	e.assertMirrors(t)
}

// TestOutOfOrderAndLateVisibility: results out of order within pages and
// changes visible only seconds after their updatedAt; the lookback catches
// them and nothing is missed.
func TestOutOfOrderAndLateVisibility(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1500, Knobs: apisim.Knobs{OutOfOrder: true, LateVisibility: 2 * time.Second}})
	cfg := syncer.Config{PageSize: 250, Lookback: time.Minute}
	e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	for round := 0; round < 3; round++ {
		e.sim.UpdateUsers(25)
		e.sim.CreateUsers(5)
		e.run(t, cfg, syncer.Request{Kind: warehouse.KindIncremental}) // some changes not yet visible
		waitVisible(t, 2*time.Second)
		e.run(t, cfg, syncer.Request{Kind: warehouse.KindIncremental})
		e.assertMirrors(t)
	}
}

// waitVisible waits out the simulator's late-visibility delay. The delay is
// the simulator's own clock rule, so polling cannot observe it; a bounded
// timer is the honest wait here.
func waitVisible(t *testing.T, d time.Duration) {
	t.Helper()
	<-time.After(d + 100*time.Millisecond)
}

// TestFaultsConverge: rate limits, 5xx and truncated bodies during a sync:
// the run converges to an exact mirror.
func TestFaultsConverge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 3000, Knobs: apisim.Knobs{
		RateLimitEvery: 4, RetryAfter: time.Second, FaultRate: 0.15, TruncateRate: 0.1,
	}})
	sum := e.run(t, syncer.Config{PageSize: 500}, syncer.Request{Kind: warehouse.KindFull})
	if sum.RateLimited == 0 || sum.Retries == 0 {
		t.Errorf("faults were not exercised: %+v", sum)
	}
	e.assertMirrors(t)
	e.sim.UpdateUsers(100)
	e.run(t, syncer.Config{PageSize: 500}, syncer.Request{Kind: warehouse.KindIncremental})
	e.assertMirrors(t)
}

// TestTokenExpiryWithRotation: OAuth access tokens expire mid-sync and every
// refresh rotates the refresh token; the run converges and the rotated
// token is stored in the warehouse.
func TestTokenExpiryWithRotation(t *testing.T) {
	t.Parallel()
	// Every third users request finds the access token expired (expiring
	// it from the sync's progress instead raced the pipeline: pages are
	// fetched ahead of the writes, and an expiry could fall between a
	// refresh and its retry).
	var usersRequests atomic.Int32
	e := newEnvWith(t, apisim.Options{Users: 2000, RefreshToken: "initial-refresh", ClientID: "cid", ClientSecret: "csecret",
		Knobs: apisim.Knobs{Churn: apisim.Churn{}}}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v2/users" && usersRequests.Add(1)%3 == 0 {
				sim.ExpireTokens()
			}
			sim.ServeHTTP(w, r)
		})
	})
	store, err := tokens.New(e.store.Pool(), e.store.Schema(), e.srv.URL+"/oauth/token", "cid")
	if err != nil {
		t.Fatal(err)
	}
	auth, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{TokenURL: e.srv.URL + "/oauth/token", ClientID: "cid",
		ClientSecret: "csecret", RefreshToken: "initial-refresh", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	e.client = newClient(t, e.srv.URL, auth)
	s := e.syncer(syncer.Config{PageSize: 200})
	if _, err := runAlone(t, context.Background(), s, syncer.Request{Kind: warehouse.KindFull}); err != nil {
		t.Fatal(err)
	}
	e.assertMirrors(t)
	if e.sim.TokenGrants() < 3 {
		t.Errorf("only %d token grants: expiry was not exercised", e.sim.TokenGrants())
	}
	stored, err := store.Load(context.Background())
	if err != nil || stored != e.sim.RefreshToken() {
		t.Errorf("stored refresh token is not the current one (err %v)", err)
	}
	// A second process started with the original, since-rotated refresh
	// token still authenticates: it prefers the stored one.
	auth2, _ := jsonapi.NewOAuth(jsonapi.OAuthConfig{TokenURL: e.srv.URL + "/oauth/token", ClientID: "cid",
		ClientSecret: "csecret", RefreshToken: "initial-refresh", Store: store})
	e.client = newClient(t, e.srv.URL, auth2)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
}

// TestQuarantineAndDrift: wrong-typed values send the resource to
// quarantine with its error; unknown attributes stay in raw and are
// reported; the run goes on.
func TestQuarantineAndDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1000, Knobs: apisim.Knobs{WrongTypeRate: 0.02, SchemaDrift: true}})
	sum := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	wrong := 0
	for _, u := range e.sim.Users() {
		if u.WrongType != "" {
			wrong++
		}
	}
	if wrong == 0 || sum.Quarantined != int64(wrong) {
		t.Errorf("quarantined %d, simulator sent %d wrong-typed users", sum.Quarantined, wrong)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.quarantine WHERE resource_type = 'user' AND error <> '' AND raw ? 'attributes' AND resolved_at IS NULL`); n != int64(wrong) {
		t.Errorf("quarantine rows = %d, want %d", n, wrong)
	}
	if len(sum.Unknown) == 0 {
		t.Error("schema drift not reported")
	}
	for attr := range sum.Unknown {
		if n := e.count(t, `SELECT count(*) FROM %s.users WHERE raw ? $1`, attr); n == 0 {
			t.Errorf("unknown attribute %s not kept in raw", attr)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users`); n != int64(1000-wrong) {
		t.Errorf("users = %d, want %d", n, 1000-wrong)
	}
}

// TestConcurrentSyncs: a second sync exits with ErrLocked, or waits with
// WaitLock; the data is right either way.
func TestConcurrentSyncs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 2000, Knobs: apisim.Knobs{Latency: 30 * time.Millisecond}})
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := runAlone(t, context.Background(), e.syncer(syncer.Config{PageSize: 200,
			Progress: func(syncer.Progress) { once.Do(func() { close(started) }) }}), syncer.Request{Kind: warehouse.KindFull})
		done <- err
	}()
	<-started
	_, err := runAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.Request{Kind: warehouse.KindIncremental})
	if !errors.Is(err, warehouse.ErrLocked) {
		t.Errorf("second sync: %v, want ErrLocked", err)
	}
	waited, err := runAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.Request{Kind: warehouse.KindIncremental, WaitLock: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if waited.Kind != warehouse.KindIncremental || waited.Inserted != 0 {
		t.Errorf("waiting sync ran before the first finished: %+v", waited)
	}
	e.assertMirrors(t)
}
