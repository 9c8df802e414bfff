package jsonapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestPacingSpreadsTheRestOfTheWindow runs the worker's path through an
// hour's rate-limit window that starts with the budget down to its share: a
// sync of one request is due every minute, and a wait longer than the
// worker's USERSYNC_RATE_LIMIT_WAIT (10 s) is not slept but returned, as the
// job's snooze, after which the job comes back. The requests left above the
// floor must go out spread over the window (some in every ten minutes), not
// held back to its last minutes, and the floor is never crossed; with and
// without x-ratelimit-reset.
func TestPacingSpreadsTheRestOfTheWindow(t *testing.T) {
	t.Parallel()
	for _, withReset := range []bool{true, false} {
		t.Run("reset header "+strconv.FormatBool(withReset), func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(t)
			start := clock.Now()
			const limit, floor = 100, 50 // Budget 0.5 keeps 50 of 100
			var mu sync.Mutex
			remaining := 70 // 20 above the floor: pacing from the first request
			var sentAt []time.Duration
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				remaining--
				sentAt = append(sentAt, clock.Now().Sub(start))
				w.Header().Set("X-Ratelimit-Limit", strconv.Itoa(limit))
				w.Header().Set("X-Ratelimit-Remaining", strconv.Itoa(remaining))
				if withReset {
					w.Header().Set("X-Ratelimit-Reset", strconv.FormatInt(start.Add(time.Hour).Unix(), 10))
				}
				writeDoc(w, http.StatusOK, pageBody(`{"next":null}`, len(sentAt)))
			})
			c := newClient(t, srv.URL, clock, func(o *Options) { o.Budget = 0.5; o.MaxRateLimitWait = 10 * time.Second })
			snoozes := 0
			for due := start; clock.Now().Before(start.Add(59 * time.Minute)); {
				if now := clock.Now(); now.Before(due) {
					clock.Advance(due.Sub(now))
				}
				_, err := c.Collection("users", Query{}).Next(context.Background())
				var rle *RateLimitError
				switch {
				case errors.As(err, &rle):
					snoozes++
					clock.Advance(rle.RetryAfter) // the job snoozes and runs again
				case err != nil:
					t.Fatal(err)
				default:
					due = due.Add(time.Minute)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if remaining < floor {
				t.Errorf("remaining went down to %d, below the floor of %d", remaining, floor)
			}
			per := make([]int, 6)
			for _, at := range sentAt {
				per[min(int(at/(10*time.Minute)), 5)]++
			}
			for i, n := range per {
				if n == 0 {
					t.Errorf("no request in minutes %d-%d of the window (requests per ten minutes %v, %d snoozes)", 10*i, 10*i+10, per, snoozes)
				}
			}
			if len(sentAt) < 10 {
				t.Errorf("%d requests in the hour, want most of the 20 above the floor (per ten minutes %v)", len(sentAt), per)
			}
			t.Logf("requests per ten minutes %v, %d snoozes, %d left", per, snoozes, remaining)
		})
	}
}
