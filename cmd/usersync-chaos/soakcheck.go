package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// soakCheck is one of the soak's checks: ok, or what went wrong.
type soakCheck struct {
	ok   bool
	what string
}

// check reads what the soak did and returns the line of figures and the
// checks that failed. Each check fails when its rule is broken (see
// docs/benchmarks.md): a start that runs the reconcile again, a client that
// does not pace, a sync that does not wait for the lock.
func (s *soakRun) check(ctx context.Context, elapsed time.Duration, snapDir string) (string, []string) {
	d := s.d
	var reconciles, runsFailed int64
	// A job that found the lock held completed as a waiter (output lock_wait) and went on as a
	// new job: only the last of each line is a reconcile.
	_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos_river".river_job WHERE kind = 'usersync_reconcile'
		AND created_at <= $1 AND coalesce(metadata->'output'->>'lock_wait', '') <> 'true'`, s.ended).Scan(&reconciles)
	_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos".sync_runs WHERE status = 'failed'`).Scan(&runsFailed)
	ids, newest := completeSnapshots(filepath.Join(snapDir, schemaName)) // the deployment's folder: <dir>/<USERSYNC_SCHEMA>
	complete := int64(len(ids))
	starts := 0
	for _, r := range s.replicas {
		starts += r.starts
	}
	// The schedule's ticks while the soak's events ran, and the first
	// start's run, as no reconcile ever ran: a start that runs it again
	// adds one. (The final stops are not timed away from the ticks.)
	ticks := reconcileTicks(s.sched, s.began, s.ended)
	maxReconciles := ticks + 1
	floor, kept := soakFloor(len(s.replicas)), soakKept()
	lowest, _ := d.remaining.get()
	hold, slipped := s.backfillHold(ctx)
	// A minute, or a quarter of a shorter soak (make test's), which it
	// ends in.
	wantHold := min(soakBackfillHold, d.o.soak/4)
	// The budget must have paced in a soak of minutes (make soak's ten); a
	// one-minute soak (make test's) may end a request or two above the
	// kept share, as the windows fall, and checks only the floor.
	mustPace := d.o.soak >= soakPacedWithin
	maxGap := soakReconcileEvery - soakRestartOffsets[len(soakRestartOffsets)-1] + soakRestartOffsets[0]
	var problems []string
	for _, c := range []soakCheck{
		{s.failedSeen == 0, fmt.Sprintf("usersync_runs_total{status=\"failed\"} moved by %g with no fault injected", s.failedSeen)},
		{runsFailed == 0, fmt.Sprintf("%d runs recorded failed", runsFailed)},
		{reconciles <= maxReconciles, fmt.Sprintf("%d reconcile jobs; %d ticks of %q and the first start allow %d", reconciles, ticks, soakReconcileSpec, maxReconciles)},
		{lowest >= floor, fmt.Sprintf("x-ratelimit-remaining fell to %d, below the budget's floor %d", lowest, floor)},
		{lowest <= kept || !mustPace, fmt.Sprintf("x-ratelimit-remaining never fell below %d, to the %d the budget keeps: the clients never had to pace", lowest, kept)},
		{hold >= wantHold, fmt.Sprintf("the backfill's run held the lock %s, not the %s the soak needs", hold.Round(time.Second), wantHold)},
		{slipped == 0, fmt.Sprintf("%d incremental runs started while the backfill's run held the lock", slipped)},
		{complete >= 1 && complete <= soakSnapshotKeep, fmt.Sprintf("%d complete snapshots kept, want 1 to %d", complete, soakSnapshotKeep)},
		{time.Since(newest) < d.o.converge+2*soakSnapshotEvery+maxGap, fmt.Sprintf("the newest snapshot is from %s", newest.Format(time.RFC3339))},
	} {
		if !c.ok {
			problems = append(problems, c.what)
		}
	}
	figures := fmt.Sprintf("%s, %d worker starts, reconcile jobs %d (at most %d), failed runs %d, lowest remaining %d of %d (floor %d, kept %d), backfill held the lock %s with %d syncs slipping in, snapshots kept %d",
		elapsed.Round(time.Second), starts, reconciles, maxReconciles, runsFailed, lowest, soakRateLimit, floor, kept,
		hold.Round(time.Second), slipped, complete)
	return figures, problems
}

// backfillHold returns how long the longest run of the backfill job held
// the sync lock, and how many incremental runs started meanwhile (none
// can: the lock is taken before a run starts).
func (s *soakRun) backfillHold(ctx context.Context) (time.Duration, int64) {
	var from, until *time.Time
	err := s.d.pool.QueryRow(ctx, `SELECT r.started_at, r.finished_at FROM "chaos".sync_runs r
		JOIN "chaos_river".river_job j ON j.id = r.job_id
		WHERE j.kind = 'usersync_backfill' AND r.finished_at IS NOT NULL
		ORDER BY r.finished_at - r.started_at DESC LIMIT 1`).Scan(&from, &until)
	if err != nil || from == nil || until == nil {
		return 0, 0
	}
	var slipped int64
	_ = s.d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos".sync_runs WHERE kind = 'incremental'
		AND started_at > $1 AND started_at < $2`, *from, *until).Scan(&slipped)
	return until.Sub(*from), slipped
}

// freeLoopback returns a loopback address with a free port.
func freeLoopback(ctx context.Context) string {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// scrapeFailed returns the sum of a worker's usersync_runs_total with status
// failed, 0 when it does not answer.
func scrapeFailed(ctx context.Context, addr string) float64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "usersync_runs_total{") && strings.Contains(line, `status="failed"`) {
			if f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				sum += f
			}
		}
	}
	return sum
}

// completeSnapshots returns the ids of the complete snapshots in dir and
// when the newest was written.
func completeSnapshots(dir string) ([]string, time.Time) {
	entries, _ := os.ReadDir(filepath.Join(dir, "_manifests"))
	var ids []string
	var newest time.Time
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		ids = append(ids, id)
		if info, err := e.Info(); err == nil && info.ModTime().After(newest) {
			newest = info.ModTime()
		}
	}
	return ids, newest
}
