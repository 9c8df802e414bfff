package jsonapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// budgetSim serves the simulator on the test's fake clock, over real HTTP,
// and keeps the lowest x-ratelimit-remaining it sent.
type budgetSim struct {
	sim *apisim.Server
	srv *httptest.Server

	// requests counts the requests the server got, before it answers them
	// (the simulator's own Stats count a request once its answer is sent,
	// which can be after the client has read it).
	requests atomic.Int64

	mu     sync.Mutex
	lowest int
}

func newBudgetSim(t *testing.T, clock *fakeClock, users int, k apisim.Knobs) *budgetSim {
	t.Helper()
	b := &budgetSim{lowest: -1, sim: apisim.New(apisim.Options{Seed: 1, Users: users, Now: clock.Now, Knobs: k})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.requests.Add(1)
		b.sim.ServeHTTP(w, r)
		first, _, _ := strings.Cut(w.Header().Get("X-Ratelimit-Remaining"), ",")
		if n, err := strconv.Atoi(first); err == nil {
			b.mu.Lock()
			if b.lowest < 0 || n < b.lowest {
				b.lowest = n
			}
			b.mu.Unlock()
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *budgetSim) lowestRemaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lowest
}

// TestBudgetWithoutLimitOrResetHeader: with 4,000 of 10,000
// requests left, a floor of 5,000 (USERSYNC_API_BUDGET=0.5), and
// x-ratelimit-reset or x-ratelimit-limit missing or unreadable, the client
// sends the one request that tells it the figures and then stops: the floor
// is kept from the limit it saw (else the documented 10,000, or the highest
// remaining when higher) and it is told to come back when the window
// (an hour, when the API does not say) has ended.
func TestBudgetWithoutLimitOrResetHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		limit, spent  int
		limitH, reset apisim.HeaderMode
		wantLimit     int
		// later is spent by others after the first page: the second
		// request sees the first window's highest remaining fall.
		later int
	}{
		{"reset omitted", 10_000, 6_000, apisim.HeaderSent, apisim.HeaderOmitted, 10_000, 0},
		{"reset garbled", 10_000, 6_000, apisim.HeaderSent, apisim.HeaderGarbled, 10_000, 0},
		{"limit omitted", 10_000, 6_000, apisim.HeaderOmitted, apisim.HeaderSent, DefaultRateLimit, 0},
		{"limit garbled, reset omitted", 10_000, 6_000, apisim.HeaderGarbled, apisim.HeaderOmitted, DefaultRateLimit, 0},
		{"limit omitted, above the default", 30_000, 0, apisim.HeaderOmitted, apisim.HeaderOmitted, 29_999, 16_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(t)
			b := newBudgetSim(t, clock, 50, apisim.Knobs{RateLimit: tt.limit, LimitHeader: tt.limitH, ResetHeader: tt.reset})
			b.sim.SpendRateLimit(tt.spent)
			c := newClient(t, b.srv.URL, clock, func(o *Options) { o.Budget = 0.5 })
			it := c.Collection("users", Query{}.PageSize(5))
			var err error
			pages := 0
			for ; pages < 10 && err == nil; pages++ {
				if pages == 1 {
					b.sim.SpendRateLimit(tt.later)
				}
				_, err = it.Next(context.Background())
			}
			var rle *RateLimitError
			if !errors.As(err, &rle) {
				t.Fatalf("%d pages then error %v; want a *RateLimitError after the first page", pages, err)
			}
			wantReserved, wantRequests := Kept(tt.wantLimit, 0.5), int64(1)
			if tt.later > 0 {
				wantRequests = 2
			}
			if int64(pages) != wantRequests+1 || b.requests.Load() != wantRequests || rle.Limit != tt.wantLimit ||
				rle.Reserved != wantReserved || rle.Remaining != tt.limit-tt.spent-tt.later-int(wantRequests) || rle.RetryAfter != MaxWait {
				t.Errorf("%d pages, %d requests, error %+v; want %d requests, limit %d, %d kept, retry after %s",
					pages, b.requests.Load(), rle, wantRequests, tt.wantLimit, wantReserved, MaxWait)
			}
			if !strings.Contains(err.Error(), "spent") {
				t.Errorf("error %q does not say the budget is spent", err)
			}
			if tt.reset != apisim.HeaderSent && !strings.Contains(err.Error(), "no readable reset time") {
				t.Errorf("error %q does not say the reset time is unknown", err)
			}
		})
	}
}

// TestBudgetPacesWithoutResetHeader: a walk of 130 pages
// against a limit of 100 per 10 minutes, with a budget share of 0.5 and no
// usable x-ratelimit-reset (never sent, or sent once and then not), spreads
// its last requests over the hour it assumes and waits for it, so the
// remaining count never falls below the floor of 50; it finishes, each
// window turning over while it waits.
func TestBudgetPacesWithoutResetHeader(t *testing.T) {
	t.Parallel()
	for _, sentFirst := range []bool{false, true} {
		t.Run("reset sent first "+strconv.FormatBool(sentFirst), func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(t)
			k := apisim.Knobs{RateLimit: 100, RateLimitWindow: 10 * time.Minute, ResetHeader: apisim.HeaderOmitted}
			if sentFirst {
				k.ResetHeader = apisim.HeaderSent
			}
			b := newBudgetSim(t, clock, 130, k)
			c := newClient(t, b.srv.URL, clock, func(o *Options) {
				o.Budget, o.RateLimitReserve, o.MaxRateLimitWait = 0.5, 5, 2*time.Hour
			})
			it := c.Collection("users", Query{}.PageSize(1))
			pages := 0
			for ; ; pages++ {
				p, err := it.Next(context.Background())
				if err != nil {
					t.Fatalf("page %d: %v", pages+1, err)
				}
				if p == nil {
					break
				}
				if sentFirst && pages == 0 {
					if err := b.sim.UpdateKnobs(func(k *apisim.Knobs) { k.ResetHeader = apisim.HeaderOmitted }); err != nil {
						t.Fatal(err)
					}
				}
			}
			if low := b.lowestRemaining(); pages != 130 || low < 50 || c.Stats().PacingWaits == 0 || b.sim.Stats().RateLimited != 0 {
				t.Errorf("%d pages, lowest remaining %d, stats %+v, %d refused; want 130 pages, never under 50 left, paced, none refused",
					pages, low, c.Stats(), b.sim.Stats().RateLimited)
			}
		})
	}
}

// TestBudgetCountsRequestsInFlight: requests paced
// at once (a sync fetches the users page and the dimension lists together)
// count those still in flight as spent. With 22 requests of its share left
// at the last reading, of eight sent at once two go and the others are told
// to wait; before, all eight went, each on the same reading.
func TestBudgetCountsRequestsInFlight(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t)
	b := newBudgetSim(t, clock, 50, apisim.Knobs{RateLimit: 100, Latency: 50 * time.Millisecond})
	b.sim.SpendRateLimit(27)
	c := newClient(t, b.srv.URL, clock, func(o *Options) { o.Budget = 0.5 })
	if _, err := c.Get(context.Background(), "users", Query{}.PageSize(1)); err != nil {
		t.Fatal(err)
	}
	// 72 left, 50 kept: 22 ours, of which 20 are spread out (RateLimitReserve).
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := c.Get(context.Background(), "users", Query{}.PageSize(1))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	refused := 0
	for err := range errs {
		var rle *RateLimitError
		switch {
		case errors.As(err, &rle):
			refused++
		case err != nil:
			t.Fatal(err)
		}
	}
	if low := b.lowestRemaining(); refused != 6 || low != 70 {
		t.Errorf("%d of 8 told to wait, lowest remaining %d; want 6 and 70", refused, low)
	}
}

// TestRateReadingsOutOfOrder: of two responses of one window read out of
// order, the one showing more left is stale and does not raise the count.
func TestRateReadingsOutOfOrder(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	reset := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	var r rateState
	for _, remaining := range []string{"70", "71"} {
		r.observe(http.Header{"X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset}}, now)
	}
	if got := r.snapshot().Remaining; got != 70 {
		t.Errorf("remaining %d, want 70", got)
	}
	r.observe(http.Header{"X-Ratelimit-Remaining": {"99"}, "X-Ratelimit-Reset": {strconv.FormatInt(now.Add(2*time.Hour).Unix(), 10)}}, now)
	if got := r.snapshot().Remaining; got != 99 {
		t.Errorf("remaining %d in the next window, want 99", got)
	}
}
