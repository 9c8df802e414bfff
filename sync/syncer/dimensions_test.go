package syncer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestDimensionsAcrossPages: teams listed over several pages are streamed
// into the warehouse, which then equals the simulator; a team removed from
// the API is marked deleted by the next sync, and comes back with the one
// after.
func TestDimensionsAcrossPages(t *testing.T) {
	t.Parallel()
	// 450 teams at 100 a page: five pages of teams.
	e := newEnv(t, apisim.Options{Users: 300, Teams: 450, Knobs: apisim.Knobs{PageSizeCap: 100}})
	sum := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	if c := sum.Dimensions["teams"]; c.Inserted != 450 || c.Deleted != 0 || c.Updated+c.Unchanged+c.Quarantined != 0 {
		t.Errorf("full sync teams: %+v", c)
	}
	// 5 teams pages, 1 roles, 1 profiles, 3 users pages.
	if sum.Requests != 10 {
		t.Errorf("full sync sent %d requests, want 10", sum.Requests)
	}
	e.assertMirrors(t)

	const gone = 321 // on the fourth page
	if err := e.sim.Delete("team", gone); err != nil {
		t.Fatal(err)
	}
	sum = e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if c := sum.Dimensions["teams"]; c.Deleted != 1 || c.Updated != 0 || c.Unchanged != 449 || c.Inserted != 0 {
		t.Errorf("teams after a deletion: %+v", c)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NOT NULL`); n != 1 {
		t.Errorf("%d teams marked deleted, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.teams WHERE id = $1 AND deleted_at IS NOT NULL`, gone); n != 1 {
		t.Errorf("team %d not marked deleted", gone)
	}
	e.assertMirrors(t)

	if err := e.sim.Restore("team", gone); err != nil {
		t.Fatal(err)
	}
	sum = e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if c := sum.Dimensions["teams"]; c.Updated != 1 || c.Deleted != 0 || c.Unchanged != 449 {
		t.Errorf("teams after the restore: %+v", c)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NOT NULL`); n != 0 {
		t.Errorf("%d teams still marked deleted", n)
	}
	e.assertMirrors(t)

	// A team whose attributes change (name, color, updatedAt) is rewritten.
	if err := e.sim.Update("team", 17); err != nil {
		t.Fatal(err)
	}
	sum = e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if c := sum.Dimensions["teams"]; c.Updated != 1 || c.Unchanged != 449 {
		t.Errorf("teams after an update: %+v", c)
	}
	e.assertMirrors(t)
	if n := schematest.AcquiredConns(e.store.Pool()); n != 0 {
		t.Errorf("%d connections still acquired after the runs", n)
	}
}

// TestDimensionsListedAtOnce: the roles and profiles lists and the users
// walk are asked for without waiting for the teams list: the first teams
// page is held until all three have been asked for (a pass that listed one
// dimension after the other, or the users after the dimensions, would never
// ask).
func TestDimensionsListedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 50, Teams: 30})
	var roles, profiles, users sync.Once
	rolesAsked, profilesAsked, usersAsked := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/roles"):
			roles.Do(func() { close(rolesAsked) })
		case strings.HasSuffix(r.URL.Path, "/profiles"):
			profiles.Do(func() { close(profilesAsked) })
		case strings.HasSuffix(r.URL.Path, "/users"):
			users.Do(func() { close(usersAsked) })
		case strings.HasSuffix(r.URL.Path, "/teams"):
			for _, asked := range []chan struct{}{rolesAsked, profilesAsked, usersAsked} {
				select {
				case <-asked:
				case <-time.After(10 * time.Second):
					http.Error(w, `{"errors":[{"status":"400","title":"roles, profiles and users were not all asked for while teams were listed"}]}`, http.StatusBadRequest)
					return
				}
			}
		}
		e.sim.ServeHTTP(w, r)
	}))
	defer srv.Close()
	client := newClient(t, srv.URL, jsonapi.StaticToken("test-token"))
	sum, err := runAlone(t, context.Background(), mustNew(t, client, e.store, syncer.Config{}), syncer.Request{Kind: warehouse.KindFull})
	if err != nil {
		t.Fatal(err)
	}
	if c := sum.Dimensions["teams"]; c.Inserted != 30 || sum.Inserted != 50 {
		t.Errorf("teams: %+v; users inserted: %d", c, sum.Inserted)
	}
	e.assertMirrors(t)
}

// TestDimensionsFailMidList: a teams list that fails after its first page,
// by an API error or a cancelled context, changes nothing in the warehouse:
// no team marked deleted, none brought back, no row rewritten. The next sync
// applies the list.
func TestDimensionsFailMidList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		check func(error) bool
		fail  func(w http.ResponseWriter, cancel context.CancelFunc) // on the second teams page
	}{
		{"api error", func(err error) bool {
			var re *jsonapi.ResponseError
			return errors.As(err, &re) && re.StatusCode == http.StatusServiceUnavailable
		}, func(w http.ResponseWriter, _ context.CancelFunc) {
			http.Error(w, `{"errors":[{"status":"503","title":"Service Unavailable"}]}`, http.StatusServiceUnavailable)
		}},
		{"cancelled", func(err error) bool { return errors.Is(err, context.Canceled) },
			func(w http.ResponseWriter, cancel context.CancelFunc) {
				cancel()
				http.Error(w, `{"errors":[{"status":"503","title":"Service Unavailable"}]}`, http.StatusServiceUnavailable)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, apisim.Options{Users: 200, Teams: 250, Knobs: apisim.Knobs{PageSizeCap: 100}})
			e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
			if err := e.sim.Delete("team", 50); err != nil {
				t.Fatal(err)
			}
			e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
			// A complete list would now bring team 50 back, from the
			// first page, and mark team 7 deleted.
			for _, err := range []error{e.sim.Restore("team", 50), e.sim.Delete("team", 7)} {
				if err != nil {
					t.Fatal(err)
				}
			}
			before := e.digest(t)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var teams atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/teams") && teams.Add(1) > 1 {
					tc.fail(w, cancel)
					return
				}
				e.sim.ServeHTTP(w, r)
			}))
			defer srv.Close()
			client := newClient(t, srv.URL, jsonapi.StaticToken("test-token"))
			_, err := runAlone(t, ctx, mustNew(t, client, e.store, syncer.Config{}), syncer.Request{Kind: warehouse.KindIncremental})
			// "listing teams: " or, cancelled while the page before is
			// staged, "staging teams: ".
			if err == nil || !tc.check(err) || !strings.Contains(err.Error(), "teams: ") {
				t.Fatalf("run over a failing teams list: %v", err)
			}
			if after := e.digest(t); after != before {
				t.Errorf("the warehouse changed:\nbefore %s\nafter  %s", before, after)
			}
			if n := e.count(t, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NOT NULL`); n != 1 {
				t.Errorf("%d teams marked deleted after a failed list, want 1 (team 50)", n)
			}
			if n := schematest.AcquiredConns(e.store.Pool()); n != 0 {
				t.Errorf("%d connections still acquired after the failed run", n)
			}

			sum := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
			if c := sum.Dimensions["teams"]; c.Deleted != 1 || c.Updated != 1 || c.Unchanged != 248 || c.Inserted != 0 {
				t.Errorf("teams of the next sync: %+v", c)
			}
			e.assertMirrors(t)
		})
	}
}

// digest sums up the dimension tables and the quarantine, every column.
func (e *testEnv) digest(t *testing.T) string {
	t.Helper()
	var out []string
	for _, table := range []string{"teams", "roles", "profiles", "quarantine"} {
		var d string
		q := `SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') FROM ` +
			pgx.Identifier{e.store.Schema(), table}.Sanitize() + ` x`
		if err := e.store.Pool().QueryRow(context.Background(), q).Scan(&d); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, table+"="+d)
	}
	return strings.Join(out, " ")
}

// BenchmarkDimensions is a full sync of a simulator with few users and
// USERSYNC_BENCH_TEAMS teams (default 40,000, the teams of a million
// users): the dimension pass dominates, and the live heap it adds
// (sync-live-MiB: the greatest live heap a GC found during the run, less the
// one before it, which holds the simulator's dataset) must stay that of one
// page whatever the number of teams.
func BenchmarkDimensions(b *testing.B) {
	teams := 40_000
	if v := os.Getenv("USERSYNC_BENCH_TEAMS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("USERSYNC_BENCH_TEAMS: %v", err)
		}
		teams = n
	}
	sim := apisim.New(apisim.Options{Seed: 1, Users: 1000, Teams: teams})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	pool := schematest.NewPool(b, 8)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store, client := freshSync(b, pool, srv.URL)
		runtime.GC()
		base := readMetric(liveHeapMetric)
		b.StartTimer()
		stopHeap, stopLive := peakHeap(), peakMetric(liveHeapMetric)
		sum, err := mustNew(b, client, store, syncer.Config{}).Run(ctx, syncer.Request{Kind: warehouse.KindFull})
		peak, live := stopHeap(), stopLive()
		if err != nil {
			b.Fatal(err)
		}
		if c := sum.Dimensions["teams"]; c.Inserted != int64(teams) {
			b.Fatalf("inserted %d of %d teams", c.Inserted, teams)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(live-min(base, live))/(1<<20), "sync-live-MiB")
	}
}

// liveHeapMetric is the heap the last GC found live: unlike the heap's
// objects it holds no garbage, whose allowance grows with the simulator's
// dataset that shares the process.
const liveHeapMetric = "/gc/heap/live:bytes"

func readMetric(name string) uint64 {
	sample := []metrics.Sample{{Name: name}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// peakMetric samples a runtime metric every few milliseconds until stopped
// and returns its greatest value.
func peakMetric(name string) (stop func() uint64) {
	var peak uint64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, readMetric(name))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak }
}
