package jobs

import (
	"testing"
	"time"
)

// TestIsDue: a periodic job is due at each tick (even one fired a little
// early) and at a start only when a tick was missed or it never ran.
func TestIsDue(t *testing.T) {
	t.Parallel()
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	tests := []struct {
		name, spec string
		last       *time.Time
		now        string
		want       bool
	}{
		{"never ran", "0 3 * * *", nil, "2026-11-24T14:00:00Z", true},
		{"daily: restart after today's run", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-24T14:00:00Z", false},
		{"daily: restart before tomorrow's", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-25T02:58:00Z", false},
		{"daily: the tick, fired early", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-25T02:59:59.5Z", true},
		{"daily: the tick", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-25T03:00:00.01Z", true},
		{"daily: a missed tick", "0 3 * * *", at("2026-11-22T03:00:00.2Z"), "2026-11-24T14:00:00Z", true},
		{"hourly: restart", "@hourly", at("2026-11-24T10:00:01Z"), "2026-11-24T10:30:00Z", false},
		{"hourly: tick", "@hourly", at("2026-11-24T10:00:01Z"), "2026-11-24T11:00:00Z", true},
		{"every 15m: restart", "@every 15m", at("2026-11-24T10:00:00.3Z"), "2026-11-24T10:05:00Z", false},
		{"every 15m: tick", "@every 15m", at("2026-11-24T10:00:00.3Z"), "2026-11-24T10:15:00.001Z", true},
		{"every 15m: a worker down an hour", "@every 15m", at("2026-11-24T10:00:00.3Z"), "2026-11-24T11:05:00Z", true},
		{"zone: restart", "CRON_TZ=Europe/Paris 0 3 * * *", at("2026-11-24T02:00:00.5Z"), "2026-11-24T20:00:00Z", false},
	}
	for _, tt := range tests {
		s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", tt.spec, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := isDue(s, tt.last, *at(tt.now)); got != tt.want {
			t.Errorf("%s: due %v, want %v", tt.name, got, tt.want)
		}
	}
}
