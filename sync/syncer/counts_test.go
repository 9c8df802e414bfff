package syncer_test

import (
	"context"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestResumedRunCountsItsVersions: the versions a run writes are saved with
// each checkpoint, so a run interrupted and resumed reports, in its summary,
// in sync_runs and in status, every version it wrote, the first attempt's
// included: a full load of 1,000 new users writes 1,000.
func TestResumedRunCountsItsVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := syncer.Config{PageSize: 100, Progress: func(p syncer.Progress) {
		if p.Pages == 3 {
			cancel()
		}
	}}
	if _, err := runAlone(t, ctx, e.syncer(cfg), syncer.Request{Kind: warehouse.KindFull}); !syncer.Interrupted(err) {
		t.Fatalf("cancelled run: %v", err)
	}
	sum := e.run(t, syncer.Config{PageSize: 100}, syncer.Request{Kind: warehouse.KindFull})
	if !sum.Resumed || sum.Versions != 1000 || sum.Inserted != 1000 {
		t.Errorf("the resumed run reports %d versions and %d inserted (resumed %t); want 1000 of each", sum.Versions, sum.Inserted, sum.Resumed)
	}
	if n := e.count(t, `SELECT versions FROM %s.sync_runs WHERE run_id = $1`, sum.RunID); n != 1000 {
		t.Errorf("sync_runs.versions = %d, want 1000", n)
	}
	if n := e.count(t, `SELECT (summary->>'versions')::bigint FROM %s.sync_runs WHERE run_id = $1`, sum.RunID); n != 1000 {
		t.Errorf("sync_runs.summary's versions = %d, want 1000", n)
	}
	st, err := e.store.Status(context.Background(), 1)
	if err != nil || len(st.Runs) != 1 || st.Runs[0].Versions != 1000 {
		t.Errorf("status: %v %+v; want the run's 1000 versions", err, st.Runs)
	}
}
