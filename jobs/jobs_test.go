package jobs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 22, 10, 7, 0, 0, time.UTC)
	tests := []struct {
		spec string
		next time.Time // zero: off
	}{
		{"*/15 * * * *", time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)},
		{"@every 15m", base.Add(15 * time.Minute)},
		{"CRON_TZ=Europe/Paris 0 3 * * *", time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)},
		{"off", time.Time{}},
		{"OFF", time.Time{}},
	}
	for _, tt := range tests {
		s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", tt.spec)
		if err != nil {
			t.Errorf("%q: %v", tt.spec, err)
			continue
		}
		if tt.next.IsZero() {
			if s != nil {
				t.Errorf("%q: not off", tt.spec)
			}
			continue
		}
		if got := s.Next(base); !got.Equal(tt.next) {
			t.Errorf("%q: next %v, want %v", tt.spec, got, tt.next)
		}
	}
	for _, bad := range []string{"", "every day", "0 */5 * * * *", "61 * * * *", "CRON_TZ=Mars/Base 0 3 * * *"} {
		_, err := ParseSchedule("USERSYNC_RECONCILE_SCHEDULE", bad)
		if err == nil || !strings.HasPrefix(err.Error(), "USERSYNC_RECONCILE_SCHEDULE ") {
			t.Errorf("%q: err %v, want one naming the variable", bad, err)
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	var snooze *river.JobSnoozeError
	var cancel *river.JobCancelError
	wrap := func(err error) error { return fmt.Errorf("syncing users: %w", err) }
	tests := []struct {
		name string
		err  error
		want string // snooze, cancel, retry, nil
		d    time.Duration
	}{
		{"success", nil, "nil", 0},
		{"locked", warehouse.ErrLocked, "snooze", lockedSnooze},
		{"drained", wrap(syncer.ErrDrained), "snooze", drainedSnooze},
		{"rate limit", wrap(&jsonapi.RateLimitError{RetryAfter: 5 * time.Minute}), "snooze", 5 * time.Minute},
		{"auth", wrap(&jsonapi.AuthError{StatusCode: 401}), "cancel", 0},
		{"forbidden", wrap(&jsonapi.ResponseError{StatusCode: 403}), "cancel", 0},
		{"query", wrap(&jsonapi.QueryError{Param: "sort"}), "cancel", 0},
		{"server", wrap(&jsonapi.ResponseError{StatusCode: 503}), "retry", 0},
		{"other", errors.New("connection reset"), "retry", 0},
	}
	for _, tt := range tests {
		got := outcome(tt.err)
		switch tt.want {
		case "nil":
			if got != nil {
				t.Errorf("%s: %v", tt.name, got)
			}
		case "snooze":
			if !errors.As(got, &snooze) || snooze.Duration != tt.d {
				t.Errorf("%s: %v, want a snooze of %s", tt.name, got, tt.d)
			}
		case "cancel":
			if !errors.As(got, &cancel) {
				t.Errorf("%s: %v, want a cancel", tt.name, got)
			}
		case "retry":
			if got == nil || errors.As(got, &snooze) || errors.As(got, &cancel) {
				t.Errorf("%s: %v, want the error itself", tt.name, got)
			}
		}
	}
}
