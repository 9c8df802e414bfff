package apisim

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestRateLimitHeaderModes: LimitHeader and ResetHeader omit or garble
// their header and nothing else; SpendRateLimit spends the window's
// requests as other tools would, and a 429 still says when to retry.
func TestRateLimitHeaderModes(t *testing.T) {
	t.Parallel()
	reset := testEpoch.Add(time.Hour)
	tests := []struct {
		name          string
		limit, resetH HeaderMode
		wantLimit     string
		wantReset     string
	}{
		{"sent", HeaderSent, HeaderSent, "10", strconv.FormatInt(reset.Unix(), 10)},
		{"omitted", HeaderOmitted, HeaderOmitted, "", ""},
		{"garbled", HeaderGarbled, HeaderGarbled, "10;w=3600", reset.UTC().Format(http.TimeFormat)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Options{Users: 10, Knobs: Knobs{RateLimit: 10, LimitHeader: tt.limit, ResetHeader: tt.resetH}})
			e.sim.SpendRateLimit(8)
			r := e.get("/api/v2/users")
			if r.status != 200 || r.header.Get("x-ratelimit-limit") != tt.wantLimit ||
				r.header.Get("x-ratelimit-reset") != tt.wantReset || r.header.Get("x-ratelimit-remaining") != "1, 11" {
				t.Fatalf("%d limit=%q remaining=%q reset=%q", r.status, r.header.Get("x-ratelimit-limit"),
					r.header.Get("x-ratelimit-remaining"), r.header.Get("x-ratelimit-reset"))
			}
			e.sim.SpendRateLimit(100)
			if r := e.get("/api/v2/users"); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "3600" ||
				r.header.Get("x-ratelimit-remaining") != "0, 10" {
				t.Errorf("over budget: %d Retry-After=%q remaining=%q", r.status, r.header.Get("Retry-After"), r.header.Get("x-ratelimit-remaining"))
			}
		})
	}
	if err := (Knobs{ResetHeader: 3}).Validate(); err == nil {
		t.Error("ResetHeader 3 accepted")
	}
}
