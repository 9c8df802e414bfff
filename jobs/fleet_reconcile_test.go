package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// TestFleetFirstReconcileAfterFirstSync: a new
// account's first reconcile is not queued beside its first sync, where it
// would walk the account against an empty warehouse, but at its schedule's
// first tick after the first sync completed; an account whose syncs never
// succeed (its token refused) gets none.
func TestFleetFirstReconcileAfterFirstSync(t *testing.T) {
	t.Parallel()
	slow := apisim.Options{Seed: 47, Users: 300, Knobs: apisim.Knobs{PageSizeCap: 50, Latency: 150 * time.Millisecond}}
	e := newFleetEnv(t,
		accountSpec{name: "n", opts: slow, token: "right", schedule: "@every 1h", reconcile: "@every 2s"},
		accountSpec{name: "r", opts: apisim.Options{Seed: 48, Users: 10}, token: "revoked", schedule: "@every 1h", reconcile: "@every 2s"},
	)
	waitUntil(t, "n's first reconcile", 60*time.Second, func() bool {
		_, f := e.jobTimes(t, "n", KindReconcile)
		return len(f) > 0
	})
	_, synced := e.jobTimes(t, "n", KindSync)
	var queued time.Time
	if err := e.pool.QueryRow(context.Background(), `SELECT min(created_at) FROM "`+e.river+`".river_job
		WHERE kind = $1 AND args->>'account' = 'n'`, KindReconcile).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	// The first tick of its phased schedule after the sync: within a
	// period (2 s) and a fleet tick (1 s), with some slack for the tick.
	if len(synced) == 0 || queued.Before(synced[0]) || queued.After(synced[0].Add(4*time.Second)) {
		t.Errorf("n's first reconcile was queued at %s, its first sync completed at %v: want the reconcile at the first tick after",
			queued.Format(time.RFC3339Nano), synced)
	}
	e.tickAfter(t, time.Now())
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = $1 AND args->>'account' = 'r'`, KindReconcile); n != 0 {
		t.Errorf("r, whose token is refused and which never synced, got %d reconcile jobs", n)
	}
}
