package syncer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestReplicasContinueTheQuietPath: two Syncers on one warehouse, each with
// its own Store and client (two worker replicas), alternate incremental runs
// while nothing changes: once each has made one full no-op run, every run of
// either is one statement and one commit. An anchor of another page or
// another watermark sends the run down its full path, which anchors again;
// a no-op run that moves the watermark anchors nothing.
func TestReplicasContinueTheQuietPath(t *testing.T) {
	t.Parallel()
	var c statementCounter
	e := newCountedEnv(t, apisim.Options{Users: 300}, &c)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	store, err := warehouse.NewStore(e.store.Pool(), e.store.Schema())
	if err != nil {
		t.Fatal(err)
	}
	replicas := []*syncer.Syncer{e.syncer(syncer.Config{}),
		mustNew(t, newClient(t, e.srv.URL, jsonapi.StaticToken("test-token")), store, syncer.Config{})}
	for i, s := range replicas {
		if _, _, xacts, err := quietRun(t, s, &c); err != nil || xacts < 3 {
			t.Fatalf("replica %d's first no-op sync: %d transactions, %v", i, xacts, err)
		}
	}
	alternate := func(what string) {
		t.Helper()
		for n := range 6 {
			sum, sqls, xacts, err := quietRun(t, replicas[n%2], &c)
			if err != nil || len(sqls) != 1 || xacts != 1 {
				t.Fatalf("%s, replica %d's no-op sync %d: %d statements in %d transactions, %v", what, n%2, n, len(sqls), xacts, err)
			}
			if a := anchorRun(t, e); a != sum.RunID {
				t.Fatalf("%s: the anchor is run %d, want the last quiet run %d", what, a, sum.RunID)
			}
		}
	}
	alternate("alternating")
	e.assertMirrors(t)

	for what, tamper := range map[string]string{
		"an anchor of another page":      `UPDATE %s.sync_state SET digest = sha256('another page') WHERE stream = 'users_page'`,
		"an anchor of another watermark": `UPDATE %s.sync_state SET watermark = watermark - interval '1 second' WHERE stream = 'users_page'`,
	} {
		if _, err := e.store.Pool().Exec(context.Background(), fmt.Sprintf(tamper, `"`+e.store.Schema()+`"`)); err != nil {
			t.Fatal(err)
		}
		if _, _, xacts, err := quietRun(t, replicas[0], &c); err != nil || xacts < 3 {
			t.Fatalf("%s: %d transactions, %v", what, xacts, err)
		}
		alternate("after " + what)
	}

	// A user written by a backfill that leaves the watermark: the next
	// incremental run changes nothing but moves the watermark past it, and
	// anchors nothing.
	e.sim.UpdateUsers(1)
	since := time.Now().Add(-time.Hour)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindBackfill, Since: &since})
	anchor := anchorRun(t, e)
	sum, _, _, err := quietRun(t, replicas[1], &c)
	if err != nil || sum.Changed() || sum.Watermark == nil || e.count(t, `SELECT count(*) FROM %s.sync_state
		WHERE stream = 'users' AND watermark = $1 AND run_id = $2`, *sum.Watermark, sum.RunID) != 1 {
		t.Fatalf("the run after the backfill: %+v, %v (want it to move the watermark, changing nothing)", sum, err)
	}
	if a := anchorRun(t, e); a != anchor {
		t.Errorf("a no-op run that moved the watermark moved the anchor from run %d to %d", anchor, a)
	}
	for i, s := range replicas {
		if _, _, xacts, err := quietRun(t, s, &c); err != nil || xacts < 3 {
			t.Fatalf("replica %d after the watermark moved: %d transactions, %v", i, xacts, err)
		}
	}
	alternate("after the watermark moved")
	e.assertMirrors(t)
}

// TestQuietRunsAtOnceRecordOne: a quiet run whose statement waits on the
// anchor while another process's quiet run moves it records nothing, though
// its snapshot holds the anchor as it was: the second of two at once takes
// the full path.
func TestQuietRunsAtOnceRecordOne(t *testing.T) {
	t.Parallel()
	var c statementCounter
	e := newCountedEnv(t, apisim.Options{Users: 100}, &c)
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	s := e.syncer(syncer.Config{})
	quietRun(t, s, &c)
	ctx := context.Background()
	q := `"` + e.store.Schema() + `"`
	tx, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT FROM `+q+`.sync_state WHERE stream = 'users_page' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() {
		_, ok := s.Quiet(ctx, syncer.Request{Kind: warehouse.KindIncremental})
		done <- ok
	}()
	for waiting := false; !waiting; {
		select {
		case ok := <-done:
			t.Fatalf("the quiet run ended (%v) without waiting on the anchor", ok)
		case <-time.After(10 * time.Millisecond):
		}
		if err := e.store.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND query LIKE '%' || $1 || '.sync_state a SET%')`, q).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	var other int64
	if err := tx.QueryRow(ctx, `WITH r AS (INSERT INTO `+q+`.sync_runs (kind, status) VALUES ('incremental', 'succeeded') RETURNING run_id)
		UPDATE `+q+`.sync_state a SET run_id = r.run_id FROM r WHERE a.stream = 'users_page' RETURNING a.run_id`).Scan(&other); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if <-done {
		t.Error("a quiet run recorded itself over another that moved the anchor while it waited")
	}
	if a := anchorRun(t, e); a != other {
		t.Errorf("the anchor is run %d, want the other process's %d", a, other)
	}
}
