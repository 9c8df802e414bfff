package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// TestLockWaiterKeepsItsPlace: a sync that finds its account's sync lock
// held waits as a job of the first priority, so once the lock is free it
// runs before the syncs of other accounts that came due after it, rather
// than behind every one of them (River orders a queue by priority, then by
// when each job became due, and a snoozed job becomes due again later).
// One sync slot; a's lock held by another session; then eight other
// accounts' syncs come due, each a second's run on a slow API.
func TestLockWaiterKeepsItsPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	specs := []accountSpec{{name: "a", opts: apisim.Options{Seed: 60, Users: 20}, token: "right", schedule: "off"}}
	var others []string
	for i := range 8 {
		name := fmt.Sprintf("x%d", i)
		others = append(others, name)
		specs = append(specs, accountSpec{name: name, opts: apisim.Options{Seed: int64(61 + i), Users: 20,
			Knobs: apisim.Knobs{Latency: time.Second}}, token: "right", schedule: "off"})
	}
	e := newFleetEnvWith(t, func(_ *Deps, c *ClientConfig) { c.MaxWorkers = 1 }, specs...)
	lock, err := e.reg.accounts[0].store.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := e.client.Insert(ctx, SyncArgs{Account: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a's sync to find its lock held", 30*time.Second, func() bool {
		return e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'a' AND (metadata ? 'lock_waits' OR metadata ? 'snoozes')`) > 0
	})
	for _, name := range others { // due after a's sync
		if _, err := e.client.Insert(ctx, SyncArgs{Account: name}, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	lock.Release()
	waitUntil(t, "a's sync", 60*time.Second, func() bool {
		return e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'a' AND state = 'completed'
			AND NOT coalesce((metadata->'output'->>'lock_wait')::boolean, false)`) == 1
	})
	var ran time.Time
	if err := e.pool.QueryRow(ctx, `SELECT attempted_at FROM "`+e.river+`".river_job WHERE args->>'account' = 'a' AND state = 'completed'
		AND NOT coalesce((metadata->'output'->>'lock_wait')::boolean, false)`).Scan(&ran); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the other accounts' syncs", 60*time.Second, func() bool {
		return e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state = 'completed'
			AND args->>'account' LIKE 'x%'`) == int64(len(others))
	})
	after := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND args->>'account' LIKE 'x%'
		AND attempted_at > $1`, ran)
	t.Logf("a's sync ran at %s; %d of the %d later syncs ran after it", ran.Format(time.StampMilli), after, len(others))
	if after == 0 {
		rows, _ := e.pool.Query(ctx, `SELECT id, args->>'account', priority, created_at, scheduled_at, attempted_at, finalized_at, metadata::text FROM "`+e.river+`".river_job WHERE kind = 'usersync_sync' ORDER BY attempted_at`)
		for rows.Next() {
			var id int64
			var acc, meta string
			var prio int
			var c, sch, at, fin time.Time
			_ = rows.Scan(&id, &acc, &prio, &c, &sch, &at, &fin, &meta)
			t.Logf("%d %s p%d created %s scheduled %s attempted %s finalized %s %s", id, acc, prio, c.Format(time.StampMilli), sch.Format(time.StampMilli), at.Format(time.StampMilli), fin.Format(time.StampMilli), meta)
		}
		rows.Close()
		t.Errorf("a's sync ran after every sync that came due after it: the wait for its lock lost its place")
	}
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'a' AND state NOT IN ('completed')`); n != 0 {
		t.Errorf("%d jobs of a left after its sync", n)
	}
}
