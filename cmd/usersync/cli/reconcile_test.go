package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

func TestReconcileCommand(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 41, Users: 600, Teams: 10})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	for _, id := range []int64{5, 6, 7} {
		if err := c.sim.DeleteUser(id); err != nil {
			t.Fatal(err)
		}
	}
	// 3 of 600 is 0.5%: above a 0.1% valve, the run stops and marks nothing.
	env := map[string]string{}
	for k, v := range c.env {
		env[k] = v
	}
	env["USERSYNC_RECONCILE_MAX_DELETE"] = "0.001"
	code, _, errs := run(t, env, "reconcile")
	if code != ExitFailure || !strings.Contains(errs, "reconcile") {
		t.Errorf("reconcile over the valve: exit %d: %s", code, errs)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE deleted_at IS NOT NULL`); n != 0 {
		t.Errorf("%d users marked deleted by a stopped reconcile", n)
	}
	code, out, errs := run(t, c.env, "reconcile", "--json")
	if code != ExitOK {
		t.Fatalf("reconcile: %s", errs)
	}
	var sum syncer.ReconcileSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Deleted != 3 || sum.Scanned != 597 {
		t.Errorf("reconcile summary: deleted %d scanned %d", sum.Deleted, sum.Scanned)
	}
	syncertest.AssertMirrors(t, c.sim, c.store)
	code, out, _ = run(t, c.env, "status")
	if code != ExitOK || !strings.Contains(out, "reconcile    succeeded") {
		t.Errorf("status does not show the reconcile:\n%s", out)
	}
	code, out, _ = run(t, c.env, "reconcile")
	if code != ExitOK || !strings.Contains(out, "0 marked deleted") || !strings.Contains(out, "membership") {
		t.Errorf("second reconcile:\n%s", out)
	}
}

func TestWorkerRunsScheduledReconcile(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 42, Users: 300, Teams: 5})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	if err := c.sim.DeleteUser(9); err != nil {
		t.Fatal(err)
	}
	startWorker(t, workerEnv(c, map[string]string{"USERSYNC_RECONCILE_SCHEDULE": "@every 2s"}))
	waitFor(t, "a scheduled reconcile", 30*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_reconcile' AND state = 'completed'`) >= 1
	})
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = 9 AND deleted_at IS NOT NULL`); n != 1 {
		t.Error("the scheduled reconcile did not mark the deleted user")
	}
}
