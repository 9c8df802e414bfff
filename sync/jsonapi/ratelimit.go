package jsonapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// resetMargin is added to waits derived from x-ratelimit-reset: it is a
// server clock reading in whole seconds, so waiting to the exact second can
// land just before the window turns over.
const resetMargin = time.Second

// epochThreshold tells an x-ratelimit-reset holding epoch seconds (the real
// service) from one holding seconds-to-wait (some proxies): no wait is ten
// years long.
const epochThreshold = 10 * 365 * 24 * 3600

// maxEpoch (9999-12-31T23:59:59Z) bounds an x-ratelimit-reset epoch: a larger
// one overflows time.Time.
const maxEpoch = 253402300799

// MaxWait bounds every wait the API can ask for (Retry-After,
// x-ratelimit-reset) and so every RateLimitError.RetryAfter: a server that
// asks for a century is asked again in an hour. Workers cap their snoozes
// with it too.
const MaxWait = time.Hour

// secondsWait is n seconds, at most MaxWait (n seconds as a Duration
// overflows past 292 years).
func secondsWait(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	if n >= int(MaxWait/time.Second) {
		return MaxWait
	}
	return time.Duration(n) * time.Second
}

// RateLimit holds the rate-limit headers of the last response that had them.
type RateLimit struct {
	// Limit is x-ratelimit-limit, or -1 if never seen.
	Limit int
	// Remaining is the first number of x-ratelimit-remaining (the hourly
	// per-user remainder), or -1 if never seen.
	Remaining int
	// RemainingAll holds every number of x-ratelimit-remaining; the real
	// service sends two, as in "9999, 19988".
	RemainingAll []int
	// Reset is when the window resets (x-ratelimit-reset), zero if unknown.
	Reset time.Time
}

// DefaultRateLimit is the API's documented rate limit, 10,000 requests per
// user per hour: while no response has carried a readable x-ratelimit-limit,
// Options.Budget keeps its share of it (or of the highest
// x-ratelimit-remaining seen, if higher), rather than no floor at all.
const DefaultRateLimit = 10_000

// DefaultRateWindow is the API's documented rate-limit window. While no
// readable x-ratelimit-reset says when the current window ends, the client
// takes it to end one window after its first reading of the window: the
// latest it can end, so waiting for it never spends what the budget keeps.
const DefaultRateWindow = time.Hour

// rateReading is the RateLimit last seen and what pacing infers from the
// readings before it.
type rateReading struct {
	rl RateLimit
	// since is when the first reading of the current window arrived (the
	// first one, or one whose remaining rose, or one a whole
	// DefaultRateWindow later): the window ends by since+DefaultRateWindow.
	since time.Time
	// highest is the highest remaining seen: the limit is at least that.
	highest int
}

// limit is the limit the budget's floor is kept from: x-ratelimit-limit as
// last seen, else DefaultRateLimit (or the highest remaining, if higher).
func (r rateReading) limit() int {
	if r.rl.Limit >= 0 {
		return r.rl.Limit
	}
	return max(DefaultRateLimit, r.highest)
}

// reset is when the window ends: x-ratelimit-reset as last seen, else the
// latest the window can end.
func (r rateReading) reset() time.Time {
	if !r.rl.Reset.IsZero() {
		return r.rl.Reset
	}
	return r.since.Add(DefaultRateWindow)
}

// rateState keeps the last reading. It is swapped as a whole so a reader
// never sees half of an update.
type rateState struct {
	last atomic.Pointer[rateReading]
	// toldBad is set once an unreadable x-ratelimit-remaining was logged.
	toldBad atomic.Bool
	// mu makes deciding a request's wait and counting it in flight one
	// step, so that requests paced at once (a sync fetches the users page
	// and the dimension lists together) do not all take the last request
	// the budget allows.
	mu sync.Mutex
	// inflight counts the requests paced whose response is not read yet:
	// the last reading does not show them, so they count as spent.
	inflight int
	// slot is when the next paced request may go, set when pacing begins
	// to wait for it and kept until it comes: a caller that snoozes
	// (RateLimitError) and comes back at its slot sends then, instead of
	// recomputing a wait from the shrunken time to reset, which would push
	// every request into the window's last minutes.
	slot time.Time
}

func (r *rateState) snapshot() RateLimit { return r.reading().rl }

func (r *rateState) reading() rateReading {
	if p := r.last.Load(); p != nil {
		return *p
	}
	return rateReading{rl: RateLimit{Limit: -1, Remaining: -1}, highest: -1}
}

// observe records the rate-limit headers of h, keeping earlier values for
// the headers h lacks, except a reset already past: it named an earlier
// window.
func (r *rateState) observe(h http.Header, now time.Time) (badRemaining bool) {
	limit, hasLimit := parseInt(h.Get("X-Ratelimit-Limit"))
	all := parseRemaining(h.Get("X-Ratelimit-Remaining"))
	badRemaining = all == nil && h.Get("X-Ratelimit-Remaining") != ""
	reset, hasReset := parseReset(h.Get("X-Ratelimit-Reset"), now)
	if !hasLimit && all == nil && !hasReset {
		return badRemaining
	}
	next := r.reading()
	if hasLimit {
		next.rl.Limit = limit
	}
	// Of two responses of one window read out of order, the later one
	// shows fewer left: a higher count is stale.
	if all != nil && hasReset && reset.Equal(next.rl.Reset) && all[0] > next.rl.Remaining && next.rl.Remaining >= 0 {
		all = nil
	}
	if all != nil {
		if next.rl.Remaining < 0 || all[0] > next.rl.Remaining || !now.Before(next.since.Add(DefaultRateWindow)) {
			next.since = now
		}
		next.rl.Remaining, next.rl.RemainingAll = all[0], all
		next.highest = max(next.highest, all[0])
	}
	switch {
	case hasReset:
		next.rl.Reset = reset
	case !next.rl.Reset.After(now):
		next.rl.Reset = time.Time{}
	}
	r.last.Store(&next)
	return badRemaining
}

// parseRemaining parses "9999" or "9999, 19988"; nil if absent or invalid.
func parseRemaining(v string) []int {
	if v == "" {
		return nil
	}
	fields := strings.Split(v, ",")
	out := make([]int, 0, len(fields))
	for _, f := range fields {
		n, ok := parseInt(f)
		if !ok {
			return nil
		}
		out = append(out, n)
	}
	return out
}

// parseReset parses x-ratelimit-reset: epoch seconds, or, for a small value,
// seconds from now.
func parseReset(v string, now time.Time) (time.Time, bool) {
	n, ok := parseInt(v)
	if !ok {
		return time.Time{}, false
	}
	if n < epochThreshold {
		return now.Add(secondsWait(n)), true
	}
	return time.Unix(int64(min(n, maxEpoch)), 0), true
}

// parseRetryAfter parses Retry-After: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, ok := parseInt(v); ok {
		return secondsWait(n), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), MaxWait), true
}

func parseInt(v string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// rateLimitWait returns how long a 429 asks to wait: Retry-After when
// present, else until x-ratelimit-reset; false when neither is usable.
func rateLimitWait(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		return d, true
	}
	if reset, ok := parseReset(h.Get("X-Ratelimit-Reset"), now); ok {
		return min(max(reset.Sub(now), 0), MaxWait-resetMargin) + resetMargin, true
	}
	return 0, false
}

// pacingWait returns how long to wait before the next request so that the
// remaining budget lasts until the window resets: nothing while more than
// reserve requests remain, then the time to reset spread over what remains,
// and the whole time to reset once nothing remains.
func pacingWait(rl RateLimit, reserve int, now time.Time) time.Duration {
	if rl.Remaining < 0 || rl.Remaining > reserve || rl.Reset.IsZero() {
		return 0
	}
	untilReset := min(rl.Reset.Sub(now), MaxWait-resetMargin)
	if untilReset <= 0 {
		return 0
	}
	if rl.Remaining == 0 {
		return untilReset + resetMargin
	}
	return untilReset / time.Duration(rl.Remaining+1)
}

// slotWait is the wait before the next request given the pacing wait now
// (pacingWait): 0 while no pacing is needed, else the time to the slot
// given when pacing began (now+wait); a request that goes at once, the slot
// having come, uses it up. Call it with mu held.
func (r *rateState) slotWait(wait time.Duration, now time.Time) time.Duration {
	if wait <= 0 {
		r.slot = time.Time{}
		return 0
	}
	if r.slot.IsZero() {
		r.slot = now.Add(wait)
	}
	left := r.slot.Sub(now)
	if left <= 0 {
		r.slot = time.Time{}
		return 0
	}
	return left
}

// Kept is how many of limit requests a budget share (Options.Budget,
// USERSYNC_API_BUDGET) leaves to others: the client waits for the reset
// rather than let x-ratelimit-remaining fall below it.
func Kept(limit int, budget float64) int {
	if limit <= 0 || budget <= 0 || budget >= 1 {
		return 0
	}
	return int(math.Ceil((1 - budget) * float64(limit)))
}

// pace sleeps before a request when the rate-limit budget is low, or
// returns a *RateLimitError when the wait exceeds MaxRateLimitWait. The
// requests Options.Budget leaves to others count as spent, and so do those
// in flight: call done once the request's response is read (or it failed).
// Without a readable x-ratelimit-limit or x-ratelimit-reset the budget
// still holds: the floor is kept from the limit last seen (else
// DefaultRateLimit) and the wait runs to the latest the window can end
// (DefaultRateWindow).
func (c *Client) pace(ctx context.Context, reqURL string) (done func(), err error) {
	c.rate.mu.Lock()
	rd := c.rate.reading()
	rl := rd.rl
	limit := rd.limit()
	reserved := Kept(limit, c.opts.Budget)
	ours := rl
	ours.Reset = rd.reset()
	if rl.Remaining >= 0 {
		ours.Remaining = max(rl.Remaining-reserved-c.rate.inflight, 0)
	}
	wait := c.rate.slotWait(pacingWait(ours, c.opts.RateLimitReserve, c.clock.Now()), c.clock.Now())
	if wait > c.opts.MaxRateLimitWait {
		c.rate.mu.Unlock()
		return nil, &RateLimitError{Method: http.MethodGet, URL: sanitizeURL(reqURL), RetryAfter: wait,
			Limit: limit, Remaining: rl.Remaining, Reserved: reserved, Reset: rl.Reset}
	}
	if wait > 0 {
		c.rate.slot = time.Time{} // this request sleeps to the slot and uses it up
	}
	c.rate.inflight++
	c.rate.mu.Unlock()
	done = sync.OnceFunc(func() {
		c.rate.mu.Lock()
		c.rate.inflight--
		c.rate.mu.Unlock()
	})
	if wait <= 0 {
		return done, nil
	}
	c.stats.paced.Add(1)
	c.log.DebugContext(ctx, "pacing request", "remaining", rl.Remaining, "wait_ms", wait.Milliseconds())
	if err := c.clock.Sleep(ctx, wait); err != nil {
		done()
		return nil, err
	}
	return done, nil
}
