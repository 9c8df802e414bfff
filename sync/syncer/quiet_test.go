package syncer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// quietRun runs an incremental sync with s as a worker does (Quiet, else
// Run), counting what it sends.
func quietRun(t *testing.T, s *syncer.Syncer, c *statementCounter) (syncer.Summary, []string, int, error) {
	t.Helper()
	c.start()
	req := syncer.Request{Kind: warehouse.KindIncremental}
	sum, ok := s.Quiet(context.Background(), req)
	var err error
	if !ok {
		sum, err = runAlone(t, context.Background(), s, req)
	}
	sqls, _, _ := c.stop()
	return sum, sqls, c.transactions(), err
}

// TestRepeatedNoOpSyncIsOneStatement: a Syncer whose last incremental run
// changed nothing records the next one that lists the same in one
// statement, with the summary a full no-op run records, also after another
// process's no-op run; a change in the API, another process's full sync or
// run that changed a user, a quarantined user or a held sync lock each send
// the run down its full path, which stays exact.
func TestRepeatedNoOpSyncIsOneStatement(t *testing.T) {
	t.Parallel()
	var c statementCounter
	e := newCountedEnv(t, apisim.Options{Users: 300}, &c)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	s := e.syncer(syncer.Config{})
	full, sqls, xacts, err := quietRun(t, s, &c)
	if err != nil || xacts < 3 {
		t.Fatalf("the first no-op sync of a Syncer runs in full: %d transactions, %v", xacts, err)
	}

	quiet, sqls, xacts, err := quietRun(t, s, &c)
	if err != nil || len(sqls) != 1 || xacts != 1 || !strings.Contains(sqls[0], "INSERT INTO") {
		t.Fatalf("a repeated no-op sync: %d statements in %d transactions (want one INSERT), %v: %q", len(sqls), xacts, err, sqls)
	}
	if a := anchorRun(t, e); a != quiet.RunID {
		t.Errorf("the quiet run left the anchor at run %d, want its own %d", a, quiet.RunID)
	}
	if quiet.RunID <= full.RunID || quiet.Pages != full.Pages || quiet.Fetched != full.Fetched ||
		quiet.Unchanged != full.Unchanged || quiet.Changed() || !quiet.Watermark.Equal(*full.Watermark) {
		t.Errorf("quiet summary %+v, the full no-op run's %+v", quiet, full)
	}
	for table, dc := range full.Dimensions {
		if quiet.Dimensions[table] != dc {
			t.Errorf("%s: quiet run counts %+v, full run %+v", table, quiet.Dimensions[table], dc)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE run_id = $1 AND status = 'succeeded' AND pages = 1
		AND max_updated_at IS NOT NULL AND (summary->>'run_id')::bigint = run_id AND unchanged = $2`, quiet.RunID, quiet.Unchanged); n != 1 {
		t.Errorf("the quiet run's row is not as a full run's (%d rows)", n)
	}

	// The caller's guard holds too.
	guarded := func(ok bool) syncer.Request {
		return syncer.Request{Kind: warehouse.KindIncremental, Guard: &warehouse.Guard{SQL: "@guard_ok::boolean", Args: map[string]any{"guard_ok": ok}}}
	}
	if _, ok := s.Quiet(context.Background(), guarded(false)); ok {
		t.Fatal("Quiet recorded a run its guard refused")
	}
	if _, ok := s.Quiet(context.Background(), guarded(true)); !ok {
		t.Fatal("Quiet refused a run whose guard holds")
	}

	// A user changed in the API: the page differs, the run runs in full.
	e.sim.UpdateUsers(1)
	sum, _, xacts, err := quietRun(t, s, &c)
	if err != nil || sum.Updated != 1 || xacts < 3 {
		t.Fatalf("after a change in the API: %+v in %d transactions, %v", sum, xacts, err)
	}
	e.assertMirrors(t)
	quietRun(t, s, &c) // in full again: the last run changed something

	// Another process's no-op run reads the same page: the quiet path goes
	// on from it. Its full sync, which anchors nothing, voids it.
	other := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if a := anchorRun(t, e); a != other.RunID {
		t.Fatalf("another process's no-op run left the anchor at run %d, want its own %d", a, other.RunID)
	}
	if _, _, xacts, err = quietRun(t, s, &c); err != nil || xacts != 1 {
		t.Fatalf("after another process's no-op run: %d transactions, %v", xacts, err)
	}
	anchor := anchorRun(t, e)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	if a := anchorRun(t, e); a != anchor {
		t.Errorf("a full sync moved the anchor from run %d to %d", anchor, a)
	}
	if _, _, xacts, err = quietRun(t, s, &c); err != nil || xacts < 3 {
		t.Fatalf("after another process's full sync: %d transactions, %v", xacts, err)
	}

	// Another process's run that changed a user: in full.
	quietRun(t, s, &c)
	e.sim.UpdateUsers(1)
	if other = e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental}); other.Updated != 1 {
		t.Fatalf("another process's run after a change: %+v", other)
	}
	if _, _, xacts, err = quietRun(t, s, &c); err != nil || xacts < 3 {
		t.Fatalf("after another process's run that changed a user: %d transactions, %v", xacts, err)
	}

	// A quarantined user: in full (the full run resolves what it can).
	if _, _, xacts, _ = quietRun(t, s, &c); xacts != 1 {
		t.Fatalf("no-op sync again: %d transactions, want 1", xacts)
	}
	if _, err := e.store.Pool().Exec(context.Background(), `INSERT INTO "`+e.store.Schema()+`".quarantine
		(run_id, resource_type, resource_id, error, raw) VALUES (NULL, 'user', '1', 'test', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, _, xacts, err = quietRun(t, s, &c); err != nil || xacts == 1 {
		t.Fatalf("with a user in quarantine: %d transactions, %v", xacts, err)
	}
	if _, err := e.store.Pool().Exec(context.Background(), `DELETE FROM "`+e.store.Schema()+`".quarantine WHERE error = 'test'`); err != nil {
		t.Fatal(err)
	}

	// The sync lock held by another session: the full path reports it.
	quietRun(t, s, &c)
	lock, err := e.store.TryLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = quietRun(t, s, &c)
	lock.Release()
	if !errors.Is(err, warehouse.ErrLocked) {
		t.Fatalf("a no-op sync while another holds the lock: %v, want ErrLocked", err)
	}
	if _, _, xacts, err = quietRun(t, s, &c); err != nil || xacts < 3 {
		t.Fatalf("after a run refused the lock: %d transactions, %v", xacts, err)
	}
	e.assertMirrors(t)
}

// anchorRun returns the run of the quiet path's anchor (0 for none).
func anchorRun(t *testing.T, e *testEnv) int64 {
	t.Helper()
	return e.count(t, `SELECT coalesce((SELECT run_id FROM %s.sync_state WHERE stream = 'users_page'), 0)`)
}
