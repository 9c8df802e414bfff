package jobs

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

// TestFleetServesEveryAccount: one worker serves several
// accounts, each with its own simulated API and schema. The registered
// accounts' schedules become jobs of their own (the fleet's tick), each
// account's warehouse mirrors its API; a long backfill of account a does
// not hold back b's scheduled incremental syncs (measured by the jobs'
// timestamps: b's staleness during a's backfill stays within a few of its
// periods); an account whose token is refused fails alone; a paused account
// gets no jobs, and its job that starts is cancelled, its data untouched.
func TestFleetServesEveryAccount(t *testing.T) {
	t.Parallel()
	// a's backfill: 30 pages of 250 ms at least, long against b's period
	// even when the machine is loaded (15 pages made b's staleness under
	// load a flaky fraction of it).
	slow := apisim.Options{Seed: 41, Users: 3000, Knobs: apisim.Knobs{PageSizeCap: 100, Latency: 250 * time.Millisecond}}
	e := newFleetEnv(t,
		accountSpec{name: "a", opts: slow, token: "right", schedule: "off"},
		accountSpec{name: "b", opts: apisim.Options{Seed: 42, Users: 60}, token: "right", schedule: "@every 1s"},
		accountSpec{name: "p", opts: apisim.Options{Seed: 43, Users: 10}, token: "right", schedule: "@every 1s", paused: true},
		accountSpec{name: "r", opts: apisim.Options{Seed: 44, Users: 10}, token: "revoked", schedule: "@every 1s"},
	)
	ctx := context.Background()
	if _, err := e.client.Insert(ctx, BackfillArgs{Full: true, Account: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a's backfill", 120*time.Second, func() bool {
		return e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) == 1
	})
	waitUntil(t, "a sync of b after a's backfill", 30*time.Second, func() bool {
		_, a := e.jobTimes(t, "a", KindBackfill)
		_, b := e.jobTimes(t, "b", KindSync)
		return len(b) > 0 && b[len(b)-1].After(a[0])
	})

	// b's staleness during a's backfill: the longest time without a
	// completed sync of b, from the backfill's start to its end.
	start, end := e.jobTimes(t, "a", KindBackfill)
	_, bDone := e.jobTimes(t, "b", KindSync)
	took := end[0].Sub(start[0])
	stale, last, during := time.Duration(0), start[0], 0
	for _, f := range bDone {
		if f.Before(start[0]) {
			continue
		}
		if f.After(end[0]) {
			stale = max(stale, end[0].Sub(last))
			break
		}
		stale, last, during = max(stale, f.Sub(last)), f, during+1
	}
	t.Logf("a's backfill took %s; b synced %d times meanwhile, stale at most %s", took, during, stale)
	if took < 3*time.Second {
		t.Fatalf("a's backfill took %s: too short to tell whether it holds b back", took)
	}
	if during < 2 || stale > took*2/3 {
		t.Errorf("b synced %d times during a's %s backfill, stale up to %s: the backfill held b's syncs back", during, took, stale)
	}
	syncertest.AssertMirrors(t, e.reg.accounts[0].sim, e.reg.accounts[0].store)
	syncertest.AssertMirrors(t, e.reg.accounts[1].sim, e.reg.accounts[1].store)

	// r's token is refused: its jobs are cancelled, and it alone.
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'r' AND state = 'cancelled'`); n < 1 {
		t.Error("r's refused token cancelled none of its jobs")
	}
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' IN ('a', 'b') AND state IN ('cancelled', 'discarded', 'retryable')`); n != 0 {
		t.Errorf("%d jobs of a and b failed beside r's", n)
	}
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE args->>'account' = 'p'`); n != 0 {
		t.Errorf("paused account p got %d jobs", n)
	}
	if n := e.count(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND coalesce(args->>'account', '') = ''`); n != 0 {
		t.Errorf("the fleet's tick inserted %d jobs of the default account, which keeps its periodic jobs", n)
	}
	assertJobLogsNameAccount(t, e.logs.String())
}

// assertJobLogsNameAccount: every log line about a job names its account.
func assertJobLogsNameAccount(t *testing.T, logs string) {
	t.Helper()
	n := 0
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "job_id=") {
			n++
			if !regexp.MustCompile(`\baccount=[a-z]`).MatchString(line) {
				t.Errorf("a job's log line does not name its account: %s", line)
			}
		}
	}
	if n == 0 {
		t.Error("no log line names a job")
	}
}
