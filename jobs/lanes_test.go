package jobs

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

// The scaled-down measure of a slow API: every response of the slow
// accounts takes slowLatency, far above the slot time, and the healthy
// accounts sync every healthyEvery.
const (
	slowLatency  = 6 * time.Second
	laneSlot     = time.Second
	healthyEvery = 2 * time.Second
	laneWindow   = 20 * time.Second
	// laneSlack is what a healthy account's gap between two completed
	// syncs may exceed its schedule by: the fleet's tick (1 s), a normal
	// slot a slow account holds for at most the slot time, and the run.
	laneSlack = 2500 * time.Millisecond
)

// TestSlowAccountsYieldTheirSlots: with as many slow accounts as the
// worker has sync slots, the healthy accounts still sync at their schedule,
// because a run past the slot time yields its slot and continues in the
// slow lane, where the slow accounts' syncs then stay and complete. Without
// the slot time (the control) the slow accounts hold both slots and the
// healthy ones wait behind them: the measure tells the two apart.
func TestSlowAccountsYieldTheirSlots(t *testing.T) {
	// Not parallel with the package's other tests: it measures gaps of seconds, which a busy
	// make test (-parallel 8) stretches past its slack.
	for _, slot := range []time.Duration{laneSlot, 0} {
		t.Run(fmt.Sprintf("slot_time=%s", slot), func(t *testing.T) {
			t.Parallel()
			e, gap := runLanes(t, slot)
			if slot == 0 {
				if gap <= healthyEvery+laneSlack {
					t.Errorf("without a slot time the healthy accounts' longest gap was %s: the slow accounts did not hold them back, so the measure proves nothing", gap)
				}
				return
			}
			if gap > healthyEvery+laneSlack {
				t.Errorf("a healthy account went %s without a completed sync; want at most %s (its schedule and slack)", gap, healthyEvery+laneSlack)
			}
			assertSlowLane(t, e)
		})
	}
}

// runLanes runs two slow and three healthy accounts on a worker of two
// sync slots with slot time slot for laneWindow, after a warm-up, and
// returns the longest a healthy account went without a completed sync.
func runLanes(t *testing.T, slot time.Duration) (*fleetEnv, time.Duration) {
	every := fmt.Sprintf("@every %s", healthyEvery)
	slow := apisim.Options{Users: 20, Knobs: apisim.Knobs{Latency: slowLatency}}
	var specs []accountSpec
	for i, name := range []string{"s1", "s2"} {
		slow.Seed = int64(90 + i)
		specs = append(specs, accountSpec{name: name, opts: slow, token: "right", schedule: every})
	}
	for i, name := range []string{"h1", "h2", "h3"} {
		specs = append(specs, accountSpec{name: name, opts: apisim.Options{Seed: int64(95 + i), Users: 20}, token: "right", schedule: every})
	}
	e := newFleetEnvWith(t, func(d *Deps, c *ClientConfig) {
		d.SlotTime = slot
		c.MaxWorkers, c.SlowWorkers = 2, 2
	}, specs...)
	from := time.Now().Add(3 * time.Second) // the first syncs of every account
	time.Sleep(time.Until(from.Add(laneWindow)))
	to := time.Now()
	var gap time.Duration
	for _, name := range []string{"h1", "h2", "h3"} {
		_, done := e.jobTimes(t, name, KindSync)
		last, longest := from, time.Duration(0)
		for _, f := range done {
			if f.After(from) && f.Before(to) {
				longest, last = max(longest, f.Sub(last)), f
			}
		}
		longest = max(longest, to.Sub(last))
		t.Logf("slot time %s: %s completed %d syncs, longest gap %s", slot, name, len(done), longest)
		gap = max(gap, longest)
	}
	return e, gap
}

// assertSlowLane: the slow accounts yielded, then synced in the slow lane,
// where their syncs stayed (a yield or two in the normal lane, not one a
// period), and their warehouses mirror their APIs.
func assertSlowLane(t *testing.T, e *fleetEnv) {
	t.Helper()
	for i, name := range []string{"s1", "s2"} {
		slowDone := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND args->>'account' = $1
			AND queue = 'usersync_slow' AND (args->>'slow')::boolean AND state = 'completed'`, name)
		normal := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND args->>'account' = $1
			AND queue = 'default'`, name)
		t.Logf("%s: %d slow-lane syncs completed, %d normal-lane jobs", name, slowDone, normal)
		if slowDone < 1 {
			t.Errorf("%s completed no sync in the slow lane", name)
		}
		if y := yields(t, e.metrics, name); y < 1 || y > float64(normal) {
			t.Errorf("usersync_slot_yields_total of %s is %v; want one for each of its normal-lane jobs that yielded (%d jobs)", name, y, normal)
		}
		if normal > 2 {
			t.Errorf("%s had %d syncs in the normal lane; want its syncs kept in the slow lane after its first yield", name, normal)
		}
		counts, err := JobCounts(context.Background(), e.pool, e.river, name)
		if err != nil || !slices.ContainsFunc(counts, func(c JobCount) bool { return c.Kind == KindSync && c.Queue == QueueSlow }) {
			t.Errorf("%s's job counts (status) show no sync in the slow lane: %v %+v", name, err, counts)
		}
		// One run at a time across the lanes: no run began before the
		// one before it ended.
		store := e.reg.accounts[i].store
		var overlaps int64
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema.QuoteIdentifier(store.Schema())+`.sync_runs a
			JOIN `+schema.QuoteIdentifier(store.Schema())+`.sync_runs b ON a.run_id < b.run_id AND b.started_at < coalesce(a.finished_at, 'infinity')`).Scan(&overlaps); err != nil || overlaps != 0 {
			t.Errorf("%s: %d runs overlapped another (%v)", name, overlaps, err)
		}
		syncertest.AssertMirrors(t, e.reg.accounts[i].sim, store)
	}
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state IN ('retryable', 'discarded', 'cancelled')`); n != 0 {
		t.Errorf("%d sync jobs failed", n)
	}
}

// yields reads usersync_slot_yields_total of account.
func yields(t *testing.T, m *Metrics, account string) float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "usersync_slot_yields_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "account" && l.GetValue() == account {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestSyncLane: the routing of an account's next sync by its last sync job.
func TestSyncLane(t *testing.T) {
	t.Parallel()
	const slot = 30 * time.Second
	for _, c := range []struct {
		name     string
		last     *lastJob
		slot     time.Duration
		slow, ok bool
	}{
		{"no sync kept", nil, slot, false, true},
		{"a normal sync running", &lastJob{active: true, took: -1}, slot, false, true},
		{"a normal sync that took long", &lastJob{took: time.Hour}, slot, false, true},
		{"a slow-lane sync active", &lastJob{slow: true, active: true, took: -1}, slot, false, false},
		{"a slow-lane sync active, no slot time", &lastJob{slow: true, active: true, took: -1}, 0, false, false},
		{"a slow-lane sync past the slot time", &lastJob{slow: true, took: slot + time.Second}, slot, true, true},
		{"a slow-lane sync of exactly the slot time", &lastJob{slow: true, took: slot}, slot, true, true},
		{"a quick slow-lane sync", &lastJob{slow: true, took: slot - time.Second}, slot, false, true},
		{"a slow-lane sync cancelled or discarded", &lastJob{slow: true, took: -1}, slot, false, true},
		{"a long slow-lane sync, slot time now off", &lastJob{slow: true, took: time.Hour}, 0, false, true},
	} {
		args, ok := syncLane("a", c.last, c.slot)
		if ok != c.ok || (ok && args.Slow != c.slow) || args.Account != "a" {
			t.Errorf("%s: %+v, %t; want slow %t, %t", c.name, args, ok, c.slow, c.ok)
		}
	}
	if args, _ := syncLane(DefaultAccount, &lastJob{slow: true, took: time.Hour}, slot); args != (SyncArgs{Slow: true}) {
		t.Errorf("the default account's slow-lane sync: %+v; want no account named", args)
	}
}
