package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/robfig/cron/v3"

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
		{"@every 1m", base.Add(time.Minute)},
		{"CRON_TZ=Europe/Paris @every 90m", base.Add(90 * time.Minute)},
		{"CRON_TZ=Europe/Paris 0 3 * * *", time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)},
		{"off", time.Time{}},
		{"OFF", time.Time{}},
	}
	for _, tt := range tests {
		s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", tt.spec, time.Minute)
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
	for _, bad := range []string{"", "every day", "0 */5 * * * *", "61 * * * *", "CRON_TZ=Mars/Base 0 3 * * *", "CRON_TZ=Nowhere/City * * * * *",
		"CRON_TZ=", "TZ=", "CRON_TZ= ", "TZ=UTC", "CRON_TZ=UTC ", "CRON_TZ= 0 3 * * *", "@every 0s", "@every -5m", "@every", "@every soon",
		"@every 30s", "@every 59s", "CRON_TZ=UTC @every 10s"} {
		_, err := ParseSchedule("USERSYNC_RECONCILE_SCHEDULE", bad, time.Minute)
		if err == nil || !strings.HasPrefix(err.Error(), "USERSYNC_RECONCILE_SCHEDULE ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err %v, want one line naming the variable", bad, err)
		}
	}
	if _, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", "@every 30s", time.Minute); err == nil || !strings.Contains(err.Error(), "@every 30s is shorter than 1m0s") {
		t.Errorf("@every 30s: %v, want it said shorter than a minute", err)
	}
	if s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", "@every 2s", time.Second); err != nil || !s.Next(base).Equal(base.Add(2*time.Second)) {
		t.Errorf("@every 2s with a minimum of 1s: %v", err)
	}
}

// FuzzParseSchedule: no schedule setting panics, and a parsed @every runs no
// more often than the minimum.
func FuzzParseSchedule(f *testing.F) {
	for _, seed := range []string{"*/15 * * * *", "@hourly", "@every 15m", "CRON_TZ=Europe/Paris 0 3 * * *", "CRON_TZ=", "TZ=",
		"CRON_TZ= ", "TZ=X", "@every -1s", "@every 0s", "0 0 31 2 *", "@every 1m", "CRON_TZ=UTC @every 2m", "off"} {
		f.Add(seed)
	}
	base := time.Date(2026, 11, 22, 10, 7, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", spec, time.Minute)
		if err != nil || s == nil {
			return
		}
		if c, ok := s.(cron.ConstantDelaySchedule); ok && c.Delay < time.Minute {
			t.Errorf("%q: every %s", spec, c.Delay)
		}
		_ = s.Next(base)
	})
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
		{"locked", warehouse.ErrLocked, "snooze", lockedSnoozeFirst},
		{"drained", wrap(syncer.ErrDrained), "interrupted", drainedSnooze},
		{"cancelled", fmt.Errorf("%w: the process was stopped (%w)", syncer.ErrInterrupted, wrap(context.Canceled)), "interrupted", drainedSnooze},
		{"timed out", wrap(context.DeadlineExceeded), "retry", 0},
		{"rate limit", wrap(&jsonapi.RateLimitError{RetryAfter: 5 * time.Minute}), "snooze", 5 * time.Minute},
		{"rate limit of 100 years", wrap(&jsonapi.RateLimitError{RetryAfter: 100 * 365 * 24 * time.Hour}), "snooze", jsonapi.MaxWait},
		{"rate limit of no time", wrap(&jsonapi.RateLimitError{RetryAfter: -time.Minute}), "snooze", time.Second},
		{"auth", wrap(&jsonapi.AuthError{StatusCode: 401}), "cancel", 0},
		{"forbidden", wrap(&jsonapi.ResponseError{StatusCode: 403}), "cancel", 0},
		{"query", wrap(&jsonapi.QueryError{Param: "sort"}), "cancel", 0},
		{"server", wrap(&jsonapi.ResponseError{StatusCode: 503}), "retry", 0},
		{"other", errors.New("connection reset"), "retry", 0},
	}
	for _, tt := range tests {
		// A run recorded as paused is a job snoozed, and counted so; an
		// interrupted one is snoozed and counted apart.
		if paused, snoozed := syncer.Paused(tt.err), tt.want == "snooze"; paused && !snoozed {
			t.Errorf("%s: the run is recorded paused but the job does not snooze", tt.name)
		}
		if syncer.Interrupted(tt.err) != (tt.want == "interrupted") {
			t.Errorf("%s: Interrupted = %t", tt.name, syncer.Interrupted(tt.err))
		}
		if want := map[string]string{"nil": "succeeded", "snooze": "snoozed", "interrupted": "interrupted"}[tt.want]; want != "" && runStatus(tt.err) != want ||
			want == "" && runStatus(tt.err) != "failed" {
			t.Errorf("%s: status label %s", tt.name, runStatus(tt.err))
		}
		got := outcome(tt.err, nil)
		switch tt.want {
		case "interrupted":
			if !errors.As(got, &snooze) || snooze.Duration != tt.d {
				t.Errorf("%s: %v, want a snooze of %s", tt.name, got, tt.d)
			}
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

// TestLockedSnoozeBacksOff: a job that finds its account's sync lock held
// snoozes a second, then twice as long each time again, up to lockedSnooze
// (5 s);
// the count is River's (the job's metadata).
func TestLockedSnoozeBacksOff(t *testing.T) {
	t.Parallel()
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		job := &rivertype.JobRow{Metadata: []byte(fmt.Sprintf(`{"snoozes": %d}`, n))}
		var snooze *river.JobSnoozeError
		if got := outcome(warehouse.ErrLocked, job); !errors.As(got, &snooze) || snooze.Duration != want {
			t.Errorf("after %d snoozes: %v, want a snooze of %s", n, got, want)
		}
	}
}
