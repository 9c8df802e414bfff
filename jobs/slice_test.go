package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// TestRunsAreTimeSliced: a backfill longer than the time slice is
// interrupted at the end of each slice and its job resumes it at once from
// its checkpoint, so that it completes as one run whose job snoozed, and no
// attempt outlasted its slice and grace (so River's rescuer, set just above,
// never takes a live job).
func TestRunsAreTimeSliced(t *testing.T) {
	t.Parallel()
	const slice = 1500 * time.Millisecond
	slow := apisim.Options{Seed: 80, Users: 400, Knobs: apisim.Knobs{PageSizeCap: 50, Latency: 400 * time.Millisecond}}
	e := newFleetEnvWith(t, func(d *Deps, _ *ClientConfig) { d.TimeSlice = slice },
		accountSpec{name: "b", opts: slow, token: "right", schedule: "off"})
	if _, err := e.client.Insert(context.Background(), BackfillArgs{Account: "b", Full: true}, nil); err != nil {
		t.Fatal(err)
	}
	var longest float64
	waitUntil(t, "the backfill", 90*time.Second, func() bool {
		var running *float64
		_ = e.pool.QueryRow(context.Background(), `SELECT extract(epoch FROM now() - attempted_at)::float8 FROM "`+e.river+`".river_job
			WHERE kind = 'usersync_backfill' AND state = 'running'`).Scan(&running)
		if running != nil {
			longest = max(longest, *running)
		}
		return e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) == 1
	})
	snoozed := e.count(t, `SELECT coalesce((metadata->>'snoozes')::int, 0) FROM $river.river_job WHERE kind = 'usersync_backfill'`)
	var runs, succeeded int64
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE status = 'succeeded') FROM `+
		e.reg.accounts[0].store.Schema()+`.sync_runs`).Scan(&runs, &succeeded); err != nil {
		t.Fatal(err)
	}
	t.Logf("the backfill's job snoozed %d times; the longest attempt seen running %.1fs", snoozed, longest)
	if snoozed < 2 {
		t.Errorf("the backfill's job snoozed %d times, want it sliced at least twice", snoozed)
	}
	// A slice that ends before the run's first page (in its dimension pass)
	// leaves nothing to resume: the next slice starts the run again.
	if runs > 2 || succeeded != 1 || !strings.Contains(e.logs.String(), "resumed=true") {
		t.Errorf("%d runs, %d succeeded: want the sliced backfill resumed from its checkpoint as one run", runs, succeeded)
	}
	if limit := (slice + sliceGrace(slice)).Seconds(); longest > limit {
		t.Errorf("an attempt ran %.1fs, past its slice and grace (%.1fs)", longest, limit)
	}
	if !strings.Contains(e.logs.String(), "time slice") {
		t.Error("no line says a run reached the end of its time slice")
	}
}
