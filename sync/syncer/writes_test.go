package syncer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// walkIDs returns the user ids of each page of a full sync's walk, as the
// simulator serves them now.
func (e *testEnv) walkIDs(t *testing.T, pageSize int) [][]int64 {
	t.Helper()
	pages := e.client.Collection("users", jsonapi.Query{}.Sort("updatedAt").PageSize(pageSize))
	var out [][]int64
	for {
		p, err := pages.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return out
		}
		var ids []int64
		for _, r := range p.Data {
			ids = append(ids, int64(r.ID))
		}
		out = append(out, ids)
	}
}

// onInsert makes every insert of user id into users sleep for sleep
// seconds, then fail when fail is set: a real trigger, to hold a page's
// write in flight or make it fail.
func (e *testEnv) onInsert(t *testing.T, id int64, sleep float64, fail bool) {
	t.Helper()
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	raise := ""
	if fail {
		raise = `RAISE EXCEPTION 'test: refusing user %', NEW.id;`
	}
	sql := fmt.Sprintf(`
		CREATE OR REPLACE FUNCTION %[1]s.test_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.id = %[2]d THEN PERFORM pg_sleep(%[3]g); %[4]s END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER test_on_insert BEFORE INSERT ON %[1]s.users FOR EACH ROW EXECUTE FUNCTION %[1]s.test_on_insert();`,
		q, id, sleep, raise)
	if _, err := e.store.Pool().Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) dropOnInsert(t *testing.T) {
	t.Helper()
	q := pgx.Identifier{e.store.Schema()}.Sanitize()
	if _, err := e.store.Pool().Exec(context.Background(), `DROP TRIGGER test_on_insert ON `+q+`.users`); err != nil {
		t.Fatal(err)
	}
}

// TestFailedPageStopsLaterPages: pages are written two at a time, but when a
// page fails, the page prepared after it does not commit: the warehouse and
// the checkpoint hold exactly the pages before the failed one, and the next
// sync resumes from there.
func TestFailedPageStopsLaterPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 3000})
	pages := e.walkIDs(t, 500)
	// Page 3 fails after a while, so that page 4 is prepared meanwhile.
	e.onInsert(t, pages[2][0], 0.5, true)
	cfg := syncer.Config{PageSize: 500}
	_, err := runAlone(t, context.Background(), e.syncer(cfg), syncer.Request{Kind: warehouse.KindFull})
	if err == nil || !strings.Contains(err.Error(), "writing page 3") || !strings.Contains(err.Error(), "test: refusing user") {
		t.Fatalf("err = %v, want the failure of page 3", err)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users`); n != 1000 {
		t.Errorf("%d users in the warehouse, want the 1000 of pages 1 and 2", n)
	}
	later := append(append([]int64{}, pages[3]...), pages[4]...)
	if n := e.count(t, `SELECT count(*) FROM %s.users WHERE id = ANY($1)`, later); n != 0 {
		t.Errorf("%d users of pages 4 and 5 committed after page 3 failed", n)
	}
	if n := e.count(t, `SELECT pages FROM %s.sync_runs ORDER BY run_id DESC LIMIT 1`); n != 2 {
		t.Errorf("the run's checkpoint holds %d pages, want 2", n)
	}

	e.dropOnInsert(t)
	e.sim.ResetStats()
	sum := e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	e.assertMirrors(t)
	if sum.Inserted != 3000 {
		t.Errorf("the resumed run's summary says %d inserted, want 3000 for the whole run", sum.Inserted)
	}
	if got := e.sim.Stats().Requests; got > 8 {
		t.Errorf("the resumed run sent %d requests, want at most 4 users pages and the dimensions", got)
	}
}

// TestPagesSharingAUserAreNotWrittenAtOnce: a user updated during the walk
// comes back on the next page while the first page is still being written;
// that page waits for the first to commit (written at once, both would
// insert the same new user).
func TestPagesSharingAUserAreNotWrittenAtOnce(t *testing.T) {
	t.Parallel()
	var served atomic.Int32
	var moved atomic.Int64
	e := newEnvWith(t, apisim.Options{Users: 15}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/users") || served.Add(1) != 1 || moved.Load() == 0 {
				sim.ServeHTTP(w, r)
				return
			}
			// The last user of page 1 moves to the end of the walk: page 2.
			// It moves before page 1 reaches the client, which may ask for
			// page 2 as soon as it has read page 1.
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			if err := sim.UpdateUser(moved.Load()); err != nil {
				panic(err)
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	})
	pages := e.walkIDs(t, 10)
	served.Store(0)
	moved.Store(pages[0][9])
	e.onInsert(t, pages[0][0], 0.5, false) // page 1 stays in flight
	sum := e.run(t, syncer.Config{PageSize: 10}, syncer.Request{Kind: warehouse.KindFull})
	if sum.Pages != 2 || sum.Inserted != 15 || sum.Updated != 1 {
		t.Errorf("summary %+v, want 2 pages, 15 inserted, 1 updated", sum)
	}
	e.assertMirrors(t)
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions WHERE user_id = $1`, moved.Load()); n != 2 {
		t.Errorf("the moved user has %d versions, want 2", n)
	}
}

// TestInitialLoadWithRepeatedUsers: a full sync into an empty warehouse
// copies users in without reading the warehouse for them, except users an
// earlier page of the run already wrote. Users updated while the walk is
// under way come back on later pages; they must be compared, not copied in
// a second time (that would fail on the primary key).
func TestInitialLoadWithRepeatedUsers(t *testing.T) {
	t.Parallel()
	var usersRequests atomic.Int32
	e := newEnvWith(t, apisim.Options{Users: 1200}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v2/users" && usersRequests.Add(1) == 5 {
				sim.UpdateUsers(300) // about a third already written
			}
			sim.ServeHTTP(w, r)
		})
	})
	sum := e.run(t, syncer.Config{PageSize: 100}, syncer.Request{Kind: warehouse.KindFull})
	if sum.Inserted != 1200 || sum.Updated == 0 {
		t.Errorf("initial load: inserted %d, updated %d: want every user inserted and the ones seen twice updated", sum.Inserted, sum.Updated)
	}
	e.assertMirrors(t)
}
