package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// TestBackfillWaitWithoutWorker: backfill --wait with no worker running says
// so within a bounded time, and how to start one, instead of waiting for
// good; the job stays queued for the next worker, which runs it.
func TestBackfillWaitWithoutWorker(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 31, Users: 300})
	ctx, cancel := context.WithTimeout(context.Background(), 2*noWorkerAfter)
	defer cancel()
	started := time.Now()
	code, stdout, errs := runContext(t, ctx, c.env, "backfill", "--full", "--wait", "--poll", "200ms")
	if code != ExitFailure || !strings.Contains(errs, "no worker is running for schema "+c.store.Schema()) ||
		!strings.Contains(errs, "usersync worker") || !strings.Contains(errs, "stays queued") {
		t.Fatalf("backfill --wait with no worker: exit %d after %s\n%s%s", code, time.Since(started).Round(time.Second), stdout, errs)
	}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'available'`); n != 1 {
		t.Errorf("%d backfill jobs left queued, want 1", n)
	}
	startWorker(t, workerEnv(c, nil))
	waitFor(t, "the worker to run the queued backfill", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) == 1
	})
}

// runContext calls Main in-process with ctx and the given environment.
func runContext(t *testing.T, ctx context.Context, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(ctx, args, environ(env), &out, &errb)
	return code, out.String(), errb.String()
}
