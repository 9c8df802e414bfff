package jsonapi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRateLimit429Waits(t *testing.T) {
	t.Parallel()
	clockStart := newFakeClock(t).Now()
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"retry-after seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"retry-after http date", map[string]string{"Retry-After": clockStart.Add(30 * time.Second).UTC().Format(http.TimeFormat)}, 30 * time.Second},
		{"x-ratelimit-reset epoch", map[string]string{"X-Ratelimit-Reset": strconv.FormatInt(clockStart.Add(20*time.Second).Unix(), 10)}, 21 * time.Second},
		{"retry-after wins over reset", map[string]string{"Retry-After": "3",
			"x-ratelimit-reset": strconv.FormatInt(clockStart.Add(50*time.Second).Unix(), 10)}, 3 * time.Second},
		{"reset in the past", map[string]string{"X-Ratelimit-Reset": strconv.FormatInt(clockStart.Add(-time.Hour).Unix(), 10)}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if rec.add(r) == 1 {
					for k, v := range tt.headers {
						w.Header().Set(k, v)
					}
					writeDoc(w, http.StatusTooManyRequests, `{"errors":[{"id":"rateLimitExceeded"}]}`)
					return
				}
				writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
			})
			clock := newFakeClock(t)
			c := newClient(t, srv.URL, clock, nil)
			if _, err := c.Collection("users", Query{}).Next(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := clock.Sleeps(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("sleeps %v, want [%s]", got, tt.want)
			}
			if st := c.Stats(); st.RateLimited != 1 || st.Retries != 1 || st.Requests != 2 || st.ByStatus[429] != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestRateLimitLongWaitReturnsError(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.Header().Set("Retry-After", "3600")
		w.Header().Set("X-Ratelimit-Limit", "10000")
		w.Header().Set("X-Ratelimit-Remaining", "0, 19000")
		writeDoc(w, http.StatusTooManyRequests, `{"errors":[{"id":"rateLimitExceeded"}]}`)
	})
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, nil)
	_, err := c.Collection("users", Query{}.PageSize(5)).Next(context.Background())
	var rle *RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != time.Hour || rle.Limit != 10000 || rle.Remaining != 0 {
		t.Fatalf("error %v (%+v), want a *RateLimitError of 1h", err, rle)
	}
	want := "fetching users page 1: GET /api/v2/users?count=false&page%5Bsize%5D=5: rate limited: retry after 1h0m0s"
	if err.Error() != want {
		t.Errorf("error %q\nwant %q", err, want)
	}
	if len(clock.Sleeps()) != 0 || rec.count() != 1 {
		t.Errorf("slept %v, %d requests", clock.Sleeps(), rec.count())
	}
}

func TestRateLimitMaxWaitIsConfigurable(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if rec.add(r) == 1 {
			w.Header().Set("Retry-After", "90")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
	})
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, func(o *Options) { o.MaxRateLimitWait = 2 * time.Minute })
	if _, err := c.Collection("users", Query{}).Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 90*time.Second {
		t.Errorf("sleeps %v", got)
	}
}

func TestRateLimitRepeated429sAreBounded(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) { o.MaxAttempts = 3 })
	_, err := c.Collection("users", Query{}).Next(context.Background())
	var rle *RateLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("error %v", err)
	}
	if rec.count() != 4 {
		t.Errorf("%d requests, want 4 (3 waits)", rec.count())
	}
}

func TestRateLimitHeadersInStats(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t)
	reset := clock.Now().Add(40 * time.Minute).Unix()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Limit", "10000")
		w.Header().Set("X-RateLimit-Remaining", "9999, 19988")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
		writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
	})
	c := newClient(t, srv.URL, clock, nil)
	if st := c.Stats(); st.RateLimit.Limit != -1 || st.RateLimit.Remaining != -1 {
		t.Errorf("before any request: %+v", st.RateLimit)
	}
	if _, err := c.Collection("users", Query{}).Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := c.Stats().RateLimit
	want := RateLimit{Limit: 10000, Remaining: 9999, RemainingAll: []int{9999, 19988}, Reset: time.Unix(reset, 0)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RateLimit = %+v, want %+v", got, want)
	}
}

func TestRateLimitPacingWhenBudgetLow(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t)
	var rec recorder
	var srvURL string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := rec.add(r)
		reset := clock.Now().Add(50 * time.Second)
		remaining := 4
		if n == 2 {
			remaining, reset = 0, clock.Now().Add(2*time.Hour)
		}
		w.Header().Set("X-Ratelimit-Remaining", strconv.Itoa(remaining))
		w.Header().Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		writeDoc(w, http.StatusOK, pageBody(`{"next":"`+srvURL+`/api/v2/users?page=`+strconv.Itoa(n+1)+`"}`, n))
	})
	srvURL = srv.URL
	c := newClient(t, srv.URL, clock, func(o *Options) { o.RateLimitReserve = 5 })
	it := c.Collection("users", Query{})
	for range 2 {
		if _, err := it.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// 4 requests left for 50s: one every 50s/5 = 10s.
	if got := clock.Sleeps(); len(got) != 1 || got[0] != 10*time.Second {
		t.Errorf("sleeps %v, want [10s]", got)
	}
	// Nothing left for 2h: too long to sleep, refused before sending; the
	// caller is told to come back after MaxWait at most.
	_, err := it.Next(context.Background())
	var rle *RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != MaxWait {
		t.Fatalf("error %v, want a *RateLimitError of %s", err, MaxWait)
	}
	if rec.count() != 2 || c.Stats().PacingWaits != 1 {
		t.Errorf("%d requests, stats %+v", rec.count(), c.Stats())
	}
}

func TestParseRateLimitHeaders(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	if got := parseRemaining("9999, 19988"); !reflect.DeepEqual(got, []int{9999, 19988}) {
		t.Errorf("parseRemaining = %v", got)
	}
	for _, bad := range []string{"", "x", "1,,2", "-1"} {
		if got := parseRemaining(bad); got != nil {
			t.Errorf("parseRemaining(%q) = %v", bad, got)
		}
	}
	if got, ok := parseReset("30", now); !ok || !got.Equal(now.Add(30*time.Second)) {
		t.Errorf("parseReset(delta) = %v %v", got, ok)
	}
	if got, ok := parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now); !ok || got != 0 {
		t.Errorf("a past Retry-After date = %v %v", got, ok)
	}
	if _, ok := parseRetryAfter("soon", now); ok {
		t.Error("parseRetryAfter accepted garbage")
	}
}

func TestRateLimitSleepHonoursCancellation(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	ctx, cancel := context.WithCancel(context.Background())
	clock := &cancellingClock{fakeClock: newFakeClock(t), cancel: cancel}
	c := newClient(t, srv.URL, nil, func(o *Options) { o.Clock = clock })
	_, err := c.Collection("users", Query{}).Next(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// cancellingClock cancels the context when asked to sleep, as a caller
// giving up during a wait would.
type cancellingClock struct {
	*fakeClock
	cancel context.CancelFunc
}

func (c *cancellingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel()
	return c.fakeClock.Sleep(ctx, d)
}

// TestRateLimitHugeWaits: a 429 asking to wait a century (in seconds, near
// MaxInt64 seconds, as a date in 9999, as a reset epoch far ahead) returns a
// RateLimitError of at most MaxWait, without overflowing; negative and
// unparsable values are ignored.
func TestRateLimitHugeWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"retry-after 100 years", map[string]string{"Retry-After": strconv.Itoa(100 * 365 * 24 * 3600)}, MaxWait},
		{"retry-after near MaxInt64", map[string]string{"Retry-After": "9223372036854775807"}, MaxWait},
		{"retry-after year 9999", map[string]string{"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}, MaxWait},
		{"reset epoch far ahead", map[string]string{"X-Ratelimit-Reset": "253402300799"}, MaxWait},
		{"reset near MaxInt64", map[string]string{"X-Ratelimit-Reset": "9223372036854775807"}, MaxWait},
		{"reset seconds just under the threshold", map[string]string{"X-Ratelimit-Reset": strconv.Itoa(epochThreshold - 1)}, MaxWait},
		{"negative retry-after, reset in two hours", map[string]string{"Retry-After": "-5", "X-Ratelimit-Reset": "7200"}, MaxWait},
		{"negative retry-after, reset in 90s", map[string]string{"Retry-After": "-5", "X-Ratelimit-Reset": "90"}, 91 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				writeDoc(w, http.StatusTooManyRequests, `{"errors":[{"id":"rateLimitExceeded"}]}`)
			})
			clock := newFakeClock(t)
			c := newClient(t, srv.URL, clock, nil)
			_, err := c.Collection("users", Query{}).Next(context.Background())
			var rle *RateLimitError
			if !errors.As(err, &rle) || rle.RetryAfter != tt.want {
				t.Fatalf("error %v (%+v), want a *RateLimitError of %s", err, rle, tt.want)
			}
			if len(clock.Sleeps()) != 0 {
				t.Errorf("slept %v", clock.Sleeps())
			}
		})
	}
	// Pacing toward a reset in 9999 waits at most MaxWait too.
	if w := pacingWait(RateLimit{Limit: 100, Remaining: 0, Reset: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}, 20, time.Now()); w <= 0 || w > MaxWait+resetMargin {
		t.Errorf("pacing toward 9999: %s", w)
	}
}

// TestRateLimitBadRemaining: an x-ratelimit-remaining that is empty, not a
// number or negative is ignored for pacing (no wait, no error, whatever the
// budget) and logged once at debug level.
func TestRateLimitBadRemaining(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"abc", "-5", " , ", "1e3"} {
		var rec recorder
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			n := rec.add(r)
			w.Header().Set("X-Ratelimit-Limit", "100")
			w.Header().Set("X-Ratelimit-Remaining", v)
			w.Header().Set("X-Ratelimit-Reset", "3600")
			writeDoc(w, http.StatusOK, pageBody(`{"next":"http://`+r.Host+`/api/v2/users?page=`+strconv.Itoa(n+1)+`"}`, n))
		})
		var logs bytes.Buffer
		clock := newFakeClock(t)
		c := newClient(t, srv.URL, clock, func(o *Options) {
			o.Budget = 0.5
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		it := c.Collection("users", Query{})
		for range 3 {
			if _, err := it.Next(context.Background()); err != nil {
				t.Fatalf("%q: %v", v, err)
			}
		}
		if len(clock.Sleeps()) != 0 || rec.count() != 3 {
			t.Errorf("%q: slept %v over %d requests", v, clock.Sleeps(), rec.count())
		}
		if n := strings.Count(logs.String(), "x-ratelimit-remaining is not a count"); n != 1 {
			t.Errorf("%q: logged %d times, want once", v, n)
		}
	}
}
