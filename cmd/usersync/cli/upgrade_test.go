package cli

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// previousRelease is the commit of the release before one account model:
// its worker scheduled the environment's account with River's periodic jobs,
// and its jobs of that account carry an empty account argument.
const previousRelease = "a48392a"

// TestUpgradeFromPreviousRelease: a warehouse the previous release made and
// synced, with a backfill it left queued (its account argument empty), is
// taken over by today's worker with no action: the queued job runs as the
// environment's account, and the scheduled sync continues from the
// previous release's checkpoint (an incremental run, the watermark kept).
func TestUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	t.Parallel()
	prev := buildPrevious(t)
	sim := apisim.New(apisim.Options{Seed: 61, Users: 300})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "",
		"USERSYNC_API_URL": srv.URL, "USERSYNC_API_TOKEN": "cli-test-token"}
	for _, args := range [][]string{{"migrate"}, {"sync", "--full"}, {"backfill", "--full"}} {
		cmd := exec.Command(prev, args...)
		cmd.Env = environ(env)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the previous release's %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	c := &cliEnv{sim: sim, srv: srv, env: env, store: store}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'available'
		AND coalesce(args->>'account', '') = ''`); n != 1 {
		t.Fatalf("%d old-style backfill jobs queued by the previous release, want 1", n)
	}
	watermark := c.query(t, `SELECT extract(epoch FROM max(watermark))::bigint FROM $schema.sync_state WHERE watermark IS NOT NULL`)
	sim.UpdateUsers(9)

	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 2s", "USERSYNC_FLEET_TICK": "1s"}))
	waitFor(t, "the old backfill and a scheduled sync to complete", 90*time.Second, func() bool {
		// A job that found the lock held completes as a waiter (output lock_wait) and goes on as a new job.
		const ran = `state = 'completed' AND coalesce(metadata->'output'->>'lock_wait', '') <> 'true'`
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND `+ran) == 1 &&
			c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND `+ran) >= 1
	})
	w.stop(t)
	syncertest.AssertMirrors(t, sim, store)
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind IN ('usersync_sync', 'usersync_backfill')
		AND coalesce(args->>'account', '') <> ''`); n != 0 {
		t.Errorf("%d jobs of the environment's account name it: their stored form changed", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'full'`); n != 2 {
		t.Errorf("%d full runs, want 2 (the previous release's sync and its backfill): the checkpoint was not taken over", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'incremental' AND status = 'succeeded'`); n < 1 {
		t.Errorf("no incremental run after the upgrade")
	}
	if now := c.query(t, `SELECT extract(epoch FROM max(watermark))::bigint FROM $schema.sync_state WHERE watermark IS NOT NULL`); now < watermark {
		t.Errorf("the watermark went back from %d to %d", watermark, now)
	}
}

// buildPrevious builds the previous release's binary from git, once.
func buildPrevious(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("git", "-C", root, "cat-file", "-e", previousRelease+"^{commit}").Run() != nil {
		t.Skipf("release %s is not in this checkout (a shallow clone?): fetch the history to run the upgrade test", previousRelease)
	}
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, previousRelease, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extracting release %s: %v\n%s", previousRelease, err, out)
	}
	bin := filepath.Join(dir, "usersync-prev")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/usersync")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building release %s: %v\n%s", previousRelease, err, out)
	}
	return bin
}
