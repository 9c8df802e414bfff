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
