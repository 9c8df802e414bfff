package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestCancelledRunIsInterrupted: a run whose context is cancelled mid-way
// (Ctrl-C, SIGTERM) is recorded interrupted, not failed, with the requests
// it sent; the next run resumes it and status shows it interrupted. A run
// that runs out of time (a job timeout) is a failure.
func TestCancelledRunIsInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := syncer.Config{PageSize: 100, Progress: func(p syncer.Progress) {
		if p.Pages == 3 {
			cancel()
		}
	}}
	_, err := runAlone(t, ctx, e.syncer(cfg), syncer.Request{Kind: warehouse.KindFull})
	if !syncer.Interrupted(err) || syncer.Paused(err) {
		t.Errorf("cancelled run: %v; want it interrupted", err)
	}
	st, err := e.store.Status(context.Background(), 5)
	if err != nil || len(st.Runs) != 1 {
		t.Fatalf("status: %v %+v", err, st.Runs)
	}
	r := st.Runs[0]
	if r.Status != "interrupted" || r.Pages < 3 || r.Requests < r.Pages+3 {
		t.Errorf("the cancelled run is recorded %s with %d pages and %d requests; want interrupted, its pages and their requests",
			r.Status, r.Pages, r.Requests)
	}
	sum := e.run(t, syncer.Config{PageSize: 100}, syncer.Request{Kind: warehouse.KindFull})
	if !sum.Resumed || sum.RunID != r.RunID || sum.Pages != 10 {
		t.Errorf("the next run: resumed %t, run %d of %d pages; want run %d resumed, 10 pages", sum.Resumed, sum.RunID, sum.Pages, r.RunID)
	}
	e.assertMirrors(t)
	checkVersionsOfResumedRun(t, e, sum)

	tctx, tcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer tcancel()
	<-tctx.Done()
	if _, err := runAlone(t, tctx, e.syncer(syncer.Config{}), syncer.Request{Kind: warehouse.KindIncremental}); err == nil || syncer.Interrupted(err) {
		t.Errorf("a run out of time: %v; want a failure, not an interruption", err)
	}
}

// checkVersionsOfResumedRun: the versions a run writes are saved with each
// checkpoint, so the resumed full load of 1,000 new users reports all 1,000
// (the first attempt's included) in its summary, in sync_runs and in status.
func checkVersionsOfResumedRun(t *testing.T, e *testEnv, sum syncer.Summary) {
	t.Helper()
	if sum.Versions != 1000 || sum.Inserted != 1000 {
		t.Errorf("the resumed run reports %d versions and %d inserted; want 1000 of each", sum.Versions, sum.Inserted)
	}
	if n := e.count(t, `SELECT versions FROM %s.sync_runs WHERE run_id = $1`, sum.RunID); n != 1000 {
		t.Errorf("sync_runs.versions = %d, want 1000", n)
	}
	if n := e.count(t, `SELECT (summary->>'versions')::bigint FROM %s.sync_runs WHERE run_id = $1`, sum.RunID); n != 1000 {
		t.Errorf("sync_runs.summary's versions = %d, want 1000", n)
	}
	if st, err := e.store.Status(context.Background(), 1); err != nil || len(st.Runs) != 1 || st.Runs[0].Versions != 1000 {
		t.Errorf("status: %v %+v; want the run's 1000 versions", err, st.Runs)
	}
}

// TestDrainedBeforeTheRunStartsNone: a run asked for after its drain closed
// (a worker stopping) starts no run and records none.
func TestDrainedBeforeTheRunStartsNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 50})
	drain := make(chan struct{})
	close(drain)
	_, err := runAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.Request{Kind: warehouse.KindIncremental,
		Drain: drain, LockTimeout: time.Minute})
	if !errors.Is(err, syncer.ErrDrained) {
		t.Errorf("drained run: %v", err)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs`); n != 0 {
		t.Errorf("%d runs recorded", n)
	}
}

// TestDrainEndsTheLockWait: a run waiting for the sync lock when its drain
// closes gives up the wait at once and starts nothing (on a worker, the
// run it waited on drains and frees the lock: the waiting one must not
// take it).
func TestDrainEndsTheLockWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 50})
	lock, err := e.store.TryLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	tries := lockTries(t, e)
	drain := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := e.syncer(syncer.Config{}).Run(context.Background(), syncer.Request{Kind: warehouse.KindIncremental,
			Drain: drain, LockTimeout: time.Minute})
		done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for lockTries(t, e) == tries && time.Now().Before(deadline) {
		<-time.After(20 * time.Millisecond) // until the run has tried the lock once: it waits
	}
	close(drain)
	select {
	case err := <-done:
		if !errors.Is(err, syncer.ErrDrained) {
			t.Errorf("the waiting run: %v; want ErrDrained", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run still waits for the lock 20 s after its drain closed")
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs`); n != 0 {
		t.Errorf("%d runs recorded after the drain", n)
	}
}

// lockTries counts the sessions whose last statement tried the sync lock.
func lockTries(t *testing.T, e *testEnv) int64 {
	t.Helper()
	var n int64
	err := e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
		WHERE query LIKE 'SELECT pg_try_advisory_lock%'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefusedCredentialsAreRecorded: a run the API refuses the token of
// fails with an AuthError, records the requests it sent and the refusal,
// which status shows until a run succeeds.
func TestRefusedCredentialsAreRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 200, Token: "test-token"})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	e.sim.RevokeTokens()
	before := e.client.Stats().Requests
	_, err := runAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.Request{Kind: warehouse.KindIncremental})
	var ae *jsonapi.AuthError
	if !errors.As(err, &ae) || syncer.Interrupted(err) || syncer.Paused(err) {
		t.Fatalf("run with a revoked token: %v; want an AuthError", err)
	}
	sent := e.client.Stats().Requests - before
	st, err := e.store.Status(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Runs[0]; r.Status != "failed" || r.Requests != sent || sent == 0 {
		t.Errorf("the refused run is recorded %s with %d requests; it sent %d", r.Status, r.Requests, sent)
	}
	c := st.CredentialsRefused
	if c == nil || c.RunID != st.Runs[0].RunID || c.StatusCode != 401 || c.Kind != warehouse.KindIncremental {
		t.Fatalf("status's refused credentials: %+v", c)
	}
}

// TestCancelCauseNamesTheInterruption: a run cancelled with a cause that is
// itself an interruption (a job yielding its worker slot) is interrupted,
// and its error, recorded, says that cause rather than a stopped process.
func TestCancelCauseNamesTheInterruption(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 1000})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := fmt.Errorf("%w: yielded its slot", syncer.ErrInterrupted)
	cfg := syncer.Config{PageSize: 100, Progress: func(p syncer.Progress) {
		if p.Pages == 2 {
			cancel(cause)
		}
	}}
	_, err := runAlone(t, ctx, e.syncer(cfg), syncer.Request{Kind: warehouse.KindFull})
	if !errors.Is(err, cause) || !syncer.Interrupted(err) || strings.Contains(err.Error(), "process was stopped") {
		t.Errorf("run cancelled with a cause: %v; want it interrupted by that cause", err)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE status = 'interrupted' AND error LIKE '%%yielded its slot%%'`); n != 1 {
		t.Errorf("%d runs recorded interrupted with the cause; want 1", n)
	}
}
