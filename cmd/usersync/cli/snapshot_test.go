package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/snapshot"
)

func TestSnapshotCommand(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 51, Users: 700})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	env := map[string]string{"USERSYNC_SNAPSHOT_KEEP": "1"}
	for k, v := range c.env {
		env[k] = v
	}
	code, out, errs := run(t, env, "snapshot", "--out", dir, "--json")
	if code != ExitOK {
		t.Fatalf("snapshot: %s", errs)
	}
	var m snapshot.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	users, ok := m.Table("users")
	if !ok || users.Rows != 700 || len(users.Files) == 0 {
		t.Fatalf("manifest users: %+v", users)
	}
	if _, err := os.Stat(filepath.Join(dir, users.Files[0].Path)); err != nil {
		t.Errorf("listed file missing: %v", err)
	}
	<-time.After(1100 * time.Millisecond) // snapshot ids have one-second resolution
	code, out, errs = run(t, env, "snapshot", "--out", dir)
	if code != ExitOK || !strings.Contains(out, "read_parquet(") || !strings.Contains(out, "users_current") {
		t.Fatalf("second snapshot: %d %s %s", code, out, errs)
	}
	ids, err := snapshot.Manifests(context.Background(), mustLocal(t, dir), c.env["USERSYNC_SCHEMA"])
	if err != nil || len(ids) != 1 {
		t.Errorf("manifests kept with USERSYNC_SNAPSHOT_KEEP=1: %v %v", ids, err)
	}
	if code, _, errs := run(t, c.env, "snapshot", "--out", "off"); code != ExitUsage {
		t.Errorf("snapshot to off: %d %s", code, errs)
	}
}

// TestSnapshotDeploymentsShareFolder: two deployments (warehouse schemas)
// writing to one folder; the one keeping a single snapshot removed the
// other's (USERSYNC_SCHEMA=tok USERSYNC_SNAPSHOT_KEEP=1
// USERSYNC_SNAPSHOT_KEEP_FOR=0 usersync snapshot logged "old snapshots
// removed", all of schema usersync's).
func TestSnapshotDeploymentsShareFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	snap := func(env map[string]string, extra ...string) snapshot.Manifest {
		t.Helper()
		for i := 0; i+1 < len(extra); i += 2 {
			env[extra[i]] = extra[i+1]
		}
		code, out, errs := run(t, env, "snapshot", "--json")
		if code != ExitOK {
			t.Fatalf("snapshot of %s: %s", env["USERSYNC_SCHEMA"], errs)
		}
		var m snapshot.Manifest
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := newCLIEnv(t, apisim.Options{Seed: 53, Users: 50}), newCLIEnv(t, apisim.Options{Seed: 54, Users: 50})
	for _, c := range []*cliEnv{a, b} {
		c.env["USERSYNC_SNAPSHOT_DIR"] = dir
		if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK { // snapshots are of a completed sync
			t.Fatal(errs)
		}
	}
	first := snap(a.env)
	for range 2 {
		<-time.After(1100 * time.Millisecond) // snapshot ids have one-second resolution
		snap(b.env, "USERSYNC_SNAPSHOT_KEEP", "1", "USERSYNC_SNAPSHOT_KEEP_FOR", "0")
	}
	for _, tm := range first.Tables {
		for _, f := range tm.Files {
			if _, err := os.Stat(filepath.Join(dir, f.Path)); err != nil {
				t.Errorf("%s's snapshot lost a file to %s's retention: %v", a.env["USERSYNC_SCHEMA"], b.env["USERSYNC_SCHEMA"], err)
			}
		}
	}
	code, out, errs := run(t, a.env, "snapshot")
	if want := filepath.Join(dir, a.env["USERSYNC_SCHEMA"], "_manifests") + "/"; code != ExitOK || !strings.Contains(out, want) {
		t.Errorf("snapshot does not print the manifest under %s: %s %s", want, out, errs)
	}
}

func mustLocal(t *testing.T, dir string) snapshot.Destination {
	t.Helper()
	d, err := snapshot.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWorkerSnapshotsAfterSync: a worker writes a snapshot after each
// successful sync when USERSYNC_SNAPSHOT_AFTER_SYNC is on.
func TestWorkerSnapshotsAfterSync(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 52, Users: 300})
	dir := t.TempDir()
	startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1h", "USERSYNC_SNAPSHOT_AFTER_SYNC": "true",
		"USERSYNC_SNAPSHOT_DIR": dir}))
	waitFor(t, "a snapshot after the first sync", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state = 'completed'`) >= 1
	})
	m, err := snapshot.Latest(context.Background(), mustLocal(t, dir), c.env["USERSYNC_SCHEMA"])
	if err != nil {
		t.Fatal(err)
	}
	if users, _ := m.Table("users"); users.Rows != 300 {
		t.Errorf("snapshot users rows = %d", users.Rows)
	}
	if _, out, _ := run(t, c.env, "status"); !strings.Contains(out, "snapshot     wrote snapshot "+m.ID) {
		t.Errorf("status does not show the snapshot written:\n%s", out)
	}
	// A sync that changes nothing queues no snapshot job (one would find
	// nothing changed); one that changes a user does, and it is written.
	if code, _, errs := run(t, c.env, "backfill", "--since", "2001-01-01", "--until", "2001-01-02"); code != ExitOK {
		t.Fatal(errs)
	}
	waitFor(t, "the backfill that changes nothing", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) >= 1
	})
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot'`); n != 1 {
		t.Errorf("%d snapshot jobs after a run that changed nothing, want still 1", n)
	}
	c.sim.UpdateUsers(3)
	if code, _, errs := run(t, c.env, "backfill", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	waitFor(t, "a second snapshot job after a run that changed users", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state = 'completed'`) >= 2
	})
	if again, err := snapshot.Latest(context.Background(), mustLocal(t, dir), c.env["USERSYNC_SCHEMA"]); err != nil || again.ID == m.ID {
		t.Errorf("after a run that changed users the newest snapshot is %s (%v), want a new one", again.ID, err)
	}
}

// TestWorkerFirstStartSnapshotWaitsForSync: a worker's first start runs the
// snapshot schedule (never run) beside the first sync; the snapshot job,
// seeing the sync under way (or not yet begun), writes nothing, says why in
// its log line and outcome, and completes (no retry, no failure); the sync's
// success then enqueues the snapshot that waited, though snapshots do not
// follow every sync here, and it holds every user. Without the wait, a first
// start published a snapshot of 0 users beside 120 teams.
func TestWorkerFirstStartSnapshotWaitsForSync(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 53, Users: 300, Knobs: apisim.Knobs{Latency: 100 * time.Millisecond}})
	dir := t.TempDir()
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1h", "USERSYNC_SNAPSHOT_SCHEDULE": "@every 1h",
		"USERSYNC_SNAPSHOT_AFTER_SYNC": "false", "USERSYNC_SNAPSHOT_DIR": dir, "USERSYNC_PAGE_SIZE": "50"}))
	waitFor(t, "a skipped snapshot job and a snapshot after the first sync", 90*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state = 'completed'`) >= 2
	})
	ids, err := snapshot.Manifests(context.Background(), mustLocal(t, dir), c.env["USERSYNC_SCHEMA"])
	if err != nil || len(ids) == 0 {
		t.Fatalf("manifests %q, %v", ids, err)
	}
	for _, id := range ids {
		m, err := snapshot.ReadManifest(context.Background(), mustLocal(t, dir), c.env["USERSYNC_SCHEMA"], id)
		if err != nil {
			t.Fatal(err)
		}
		users, _ := m.Table("users")
		teams, _ := m.Table("teams")
		if users.Rows != 300 {
			t.Errorf("snapshot %s holds %d users (and %d teams), want 300", id, users.Rows, teams.Rows)
		}
	}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state = 'completed'
		AND attempt = 1 AND coalesce(array_length(errors, 1), 0) = 0 AND (metadata->'output'->>'skipped')::boolean
		AND metadata->'output'->>'reason' <> ''`); n != 1 {
		t.Errorf("%d completed snapshot jobs skipped with a reason at their first attempt, want 1", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state NOT IN ('completed')`); n != 0 {
		t.Errorf("%d snapshot jobs not completed (retried, discarded or cancelled)", n)
	}
	if !strings.Contains(w.logs.String(), "snapshot skipped: ") {
		t.Errorf("no log line says why the snapshot was skipped")
	}
}

// TestSnapshotBeforeAnySync: before any sync, the snapshot command fails
// saying why and writes nothing, and a worker's snapshot job completes as
// skipped, which status shows with the reason (text and JSON).
func TestSnapshotBeforeAnySync(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 54, Users: 50})
	dir := t.TempDir()
	const why = "no sync has walked every user yet"
	if code, _, errs := run(t, c.env, "snapshot", "--out", dir); code != ExitFailure || !strings.Contains(errs, why) {
		t.Errorf("snapshot before any sync: exit %d, %s; want %d saying %q", code, errs, ExitFailure, why)
	}
	if ids, err := snapshot.Manifests(context.Background(), mustLocal(t, dir), c.env["USERSYNC_SCHEMA"]); err != nil || len(ids) != 0 {
		t.Errorf("manifests %q, %v; want none", ids, err)
	}
	startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SNAPSHOT_SCHEDULE": "@every 1h", "USERSYNC_SNAPSHOT_DIR": dir}))
	waitFor(t, "a completed snapshot job", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state = 'completed'`) >= 1
	})
	if _, out, _ := run(t, c.env, "status"); !strings.Contains(out, "snapshot     skipped: "+why) {
		t.Errorf("status does not show the skip and its reason:\n%s", out)
	}
	_, out, _ := run(t, c.env, "status", "--json")
	var st struct {
		Last *struct {
			Skipped bool   `json:"skipped"`
			Reason  string `json:"reason"`
		} `json:"last_snapshot_job"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Last == nil || !st.Last.Skipped || !strings.Contains(st.Last.Reason, why) {
		t.Errorf("status --json last_snapshot_job = %+v, %v; want skipped saying %q", st.Last, err, why)
	}
}
