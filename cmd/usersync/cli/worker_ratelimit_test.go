package cli

import (
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// TestWorkerRateLimitSnoozes: a worker's job that the API's
// rate limit would keep waiting longer than USERSYNC_RATE_LIMIT_WAIT stops at
// once, its run recorded paused with its checkpoint, and its job snoozes
// until the wait is over: its worker slot is free for other accounts' jobs
// (the client slept up to a minute in it).
func TestWorkerRateLimitSnoozes(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 61, Users: 50, Knobs: apisim.Knobs{RateLimitEvery: 1, RetryAfter: 40 * time.Second}})
	startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_RATE_LIMIT_WAIT": "2s"}))
	waitFor(t, "a sync paused by the rate limit", 25*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'paused'`) >= 1
	})
	waitFor(t, "its job to snooze", 10*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state = 'scheduled'
			AND scheduled_at > now() + interval '20 seconds'`) == 1
	})
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state = 'running'`); n != 0 {
		t.Errorf("%d syncs still hold a worker slot", n)
	}
}
