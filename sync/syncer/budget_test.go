package syncer_test

import (
	"context"
	"errors"
	"net/http"
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

// TestAPIBudget: with a budget of 100 requests per 2-second window and a
// share of 0.5, a sync that needs about 70 requests never lets the remaining
// count fall below 50: it waits for the window's reset and completes. With a
// reset too far away to wait for, it stops with an error saying the budget is
// spent and when it resets, and the run is paused, not failed.
func TestAPIBudget(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	lowest := -1
	e := newEnvWith(t, apisim.Options{Users: 3000, Knobs: apisim.Knobs{RateLimit: 100, RateLimitWindow: 2 * time.Second}},
		func(sim *apisim.Server) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sim.ServeHTTP(w, r)
				first, _, _ := strings.Cut(w.Header().Get("X-Ratelimit-Remaining"), ",")
				if n, err := strconv.Atoi(first); err == nil {
					mu.Lock()
					if lowest < 0 || n < lowest {
						lowest = n
					}
					mu.Unlock()
				}
			})
		})
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: e.srv.URL, Auth: jsonapi.StaticToken("t"), Budget: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	e.client = client
	sum := e.run(t, syncer.Config{PageSize: 50}, syncer.Request{Kind: warehouse.KindFull})
	mu.Lock()
	low := lowest
	mu.Unlock()
	if sum.Requests < 60 || low < 50 {
		t.Errorf("%d requests, lowest remaining %d; want over 60 requests and never under 50 left", sum.Requests, low)
	}
	e.assertMirrors(t)
	if sum.RateLimit == nil || sum.RateLimit.Limit != 100 || sum.RateLimit.Remaining < 50 {
		t.Errorf("summary rate limit %+v", sum.RateLimit)
	}

	if st, err := e.store.Status(context.Background(), 0); err != nil || !strings.Contains(string(st.RateLimit), `"limit": 100`) {
		t.Errorf("status rate limit %s, %v", st.RateLimit, err)
	}

	// A window of an hour: the wait is longer than the client sleeps.
	e.sim.UpdateKnobs(func(k *apisim.Knobs) { k.RateLimitWindow = time.Hour })
	e.sim.UpdateUsers(3000)
	_, err = runAlone(t, context.Background(), e.syncer(syncer.Config{PageSize: 50}), syncer.Request{Kind: warehouse.KindIncremental})
	var rle *jsonapi.RateLimitError
	if !errors.As(err, &rle) || !strings.Contains(err.Error(), "the API budget usersync may use is") ||
		!strings.Contains(err.Error(), "it resets at") || !syncer.Paused(err) {
		t.Fatalf("error %v, want the budget spent", err)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE status = 'paused'`); n != 1 {
		t.Errorf("%d paused runs, want 1", n)
	}
}
