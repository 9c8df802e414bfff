package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestFleetBusyPausedRemoved: a job whose account's
// sync lock another run holds snoozes at once, without waiting in a worker
// slot (it waited 20 s), and counts a lock wait of its account; a paused
// account gets no job from the next tick on, and its job that starts is
// cancelled with a log line naming it; so is a removed account's; their
// data is left as it is.
func TestFleetBusyPausedRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newFleetEnv(t,
		accountSpec{name: "b", opts: apisim.Options{Seed: 45, Users: 40}, token: "right", schedule: "@every 1s"},
		accountSpec{name: "c", opts: apisim.Options{Seed: 46, Users: 40}, token: "right", schedule: "@every 1s"},
	)
	b, c := e.reg.accounts[0], e.reg.accounts[1]
	syncs := func(account string) int { _, f := e.jobTimes(t, account, KindSync); return len(f) }
	waitUntil(t, "a sync of each account", 60*time.Second, func() bool { return syncs("b") > 0 && syncs("c") > 0 })

	// Busy: b's lock held by another run (usersync sync by hand, say).
	var lock *warehouse.SyncLock
	waitUntil(t, "b's lock between two syncs", 30*time.Second, func() bool {
		var err error
		lock, err = b.store.TryLock(ctx)
		return err == nil
	})
	t.Cleanup(lock.Release) // before the pool closes, which waits for the lock's connection
	held := time.Now()
	waitUntil(t, "b's sync to find its lock held", 30*time.Second, func() bool { return lockWaits(t, e, "b") >= 1 })
	if waited := time.Since(held); waited > 8*time.Second {
		t.Errorf("b's sync snoozed %s after its lock was taken: it waited in a worker slot", waited)
	}
	before := syncs("c")
	waitUntil(t, "c's syncs while b is busy", 30*time.Second, func() bool {
		if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND args->>'account' = 'b'
			AND state = 'running' AND attempted_at < now() - interval '3 seconds'`); n != 0 {
			t.Fatalf("a sync of b waits in a worker slot while another run holds its lock")
		}
		return syncs("c") >= before+2
	})
	bBefore := syncs("b")
	lock.Release()
	// b syncs again once its lock is free, and has no job left to run.
	waitUntil(t, "b's sync after its lock is free", 30*time.Second, func() bool {
		return syncs("b") > bBefore && e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'b'
			AND state NOT IN ('completed', 'cancelled', 'discarded')`) == 0
	})

	// Paused: no job from the tick after the pause.
	e.reg.set("b", func(a *testAccount) { a.paused = true })
	paused := time.Now()
	tick := e.tickAfter(t, paused)
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'b' AND created_at >= $1`, tick); n != 0 {
		t.Errorf("paused account b got %d jobs from the ticks after its pause", n)
	}
	users := e.count(t, `SELECT count(*) FROM "`+b.store.Schema()+`".users`)
	for _, name := range []string{"b", "gone"} {
		res, err := e.client.Insert(ctx, SyncArgs{Account: name}, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the job of "+name+" to be cancelled", 30*time.Second, func() bool {
			return e.count(t, `SELECT count(*) FROM $river.river_job WHERE id = $1 AND state = 'cancelled'`, res.Job.ID) == 1
		})
	}
	for _, want := range []string{"account=b", "account=gone"} {
		if !strings.Contains(e.logs.String(), "the job's account is paused or removed: the job is cancelled") || !strings.Contains(e.logs.String(), want) {
			t.Errorf("no log line says the job of %s was cancelled", want)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM "`+b.store.Schema()+`".users`); n != users {
		t.Errorf("pausing b changed its warehouse: %d users, were %d", n, users)
	}
	if got := syncs("c"); got < before+2 {
		t.Errorf("c has %d syncs", got)
	}
	assertJobLogsNameAccount(t, e.logs.String())
	_ = c
}

// tickAfter waits for a tick of the fleet that started after at to end,
// and returns when it started: every tick from then on read the registry
// after at (ticks run one at a time, in the fleet's queue of one slot).
func (e *fleetEnv) tickAfter(t *testing.T, at time.Time) time.Time {
	t.Helper()
	var started time.Time
	waitUntil(t, "a tick of the fleet", 30*time.Second, func() bool {
		err := e.pool.QueryRow(context.Background(), `SELECT attempted_at FROM "`+e.river+`".river_job
			WHERE kind = 'usersync_due' AND state = 'completed' AND attempted_at > $1 ORDER BY id LIMIT 1`, at).Scan(&started)
		return err == nil
	})
	// One more, so that the account's jobs a tick inserted before it read
	// the pause are all older than the one returned.
	var next time.Time
	waitUntil(t, "a second tick of the fleet", 30*time.Second, func() bool {
		err := e.pool.QueryRow(context.Background(), `SELECT attempted_at FROM "`+e.river+`".river_job
			WHERE kind = 'usersync_due' AND state = 'completed' AND attempted_at > $1 ORDER BY id LIMIT 1`, started).Scan(&next)
		return err == nil
	})
	return started
}

// lockWaits reads usersync_lock_waits_total{account, kind=incremental}.
func lockWaits(t *testing.T, e *fleetEnv, account string) float64 {
	t.Helper()
	mfs, err := e.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "usersync_lock_waits_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["account"] == account && labels["kind"] == MetricIncremental {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
