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

	"github.com/usersync/usersync/sync/apisim"
)

// Soak settings: weeks of schedules in minutes.
const (
	soakReconcileEvery = 30 * time.Second
	soakSnapshotEvery  = 15 * time.Second
	soakSnapshotKeep   = 3
	soakRateLimit      = 400 // requests per soakRateWindow
	soakRateWindow     = 10 * time.Second
	soakBudget         = 0.5
)

// soakFloor is the lowest x-ratelimit-remaining the soak accepts with n
// replicas: the requests USERSYNC_API_BUDGET leaves to others, less two per
// replica, which may have requests in flight past the reading that paced
// them. docs/benchmarks.md cites it (TestBenchmarksCiteTheSoakFloor).
func soakFloor(n int) int {
	return int(float64(soakRateLimit)*(1-soakBudget)) - 2*n
}

// replica is one of the soak's two workers, on its own HTTP port.
type replica struct {
	p      *proc
	addr   string
	starts int
}

// soak runs two worker replicas against the changing simulator for o.soak
// with rolling restarts, a long backfill holding the lock while syncs are
// due, a rate-limit budget, a reconcile and a snapshot schedule, and teams
// sent as links only for the middle third; then it converges and checks what
// months of operation need: the warehouse equals the simulator, no run
// failed, reconciles ran as scheduled plus at most one catch-up per start,
// the budget share held, no job is stuck, and snapshots are within retention.
func (d *driver) soak(ctx context.Context) (passed, failed int) {
	snapDir := filepath.Join(d.tmp, "snapshots")
	d.env = append(d.env, "USERSYNC_RECONCILE_SCHEDULE=@every "+soakReconcileEvery.String(),
		"USERSYNC_SNAPSHOT_SCHEDULE=@every "+soakSnapshotEvery.String(), "USERSYNC_SNAPSHOT_DIR="+snapDir,
		"USERSYNC_SNAPSHOT_AFTER_SYNC=true", fmt.Sprintf("USERSYNC_SNAPSHOT_KEEP=%d", soakSnapshotKeep), "USERSYNC_SNAPSHOT_KEEP_FOR=0",
		fmt.Sprintf("USERSYNC_API_BUDGET=%g", soakBudget), "USERSYNC_LOG_LEVEL=info")
	knobs := func(linksOnly bool) {
		_ = d.sim.UpdateKnobs(func(k *apisim.Knobs) {
			k.Churn, k.RateLimit, k.RateLimitWindow, k.TeamsLinksOnly = d.churn, soakRateLimit, soakRateWindow, linksOnly
		})
	}
	knobs(false)
	replicas := make([]*replica, 2)
	var failedSeen float64
	start := func(r *replica) error {
		p, err := d.startWorker("USERSYNC_HTTP_ADDR=" + r.addr)
		r.p = p
		r.starts++
		return err
	}
	for i := range replicas {
		replicas[i] = &replica{addr: freeLoopback(ctx)}
		if err := start(replicas[i]); err != nil {
			fmt.Fprintf(d.out, "starting a worker: %v\n", err)
			return 0, 1
		}
	}
	began := time.Now()
	restartEvery := max(d.o.soak/10, 6*time.Second)
	backfillAt, linksOnlyAt, linksOffAt := began.Add(d.o.soak/4), began.Add(d.o.soak/3), began.Add(2*d.o.soak/3)
	next, turn, backfilled := began.Add(restartEvery), 0, false
	for time.Since(began) < d.o.soak && ctx.Err() == nil {
		now := time.Now()
		switch {
		case !backfilled && now.After(backfillAt):
			// A slow full backfill holds the lock while scheduled syncs
			// come due: they wait and snooze, never fail.
			_ = d.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Latency = 150 * time.Millisecond })
			if out, err := d.usersync(ctx, "backfill", "--full"); err != nil {
				fmt.Fprintf(d.out, "queueing the backfill: FAILED: %v: %s\n", err, lastLine(out))
				failed++
			}
			backfilled = true
			time.AfterFunc(d.o.soak/8, func() { _ = d.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Latency = 0 }) })
		case now.After(linksOnlyAt) && now.Before(linksOffAt):
			knobs(true)
		case now.After(linksOffAt):
			knobs(false)
		}
		if now.After(next) {
			r := replicas[turn%len(replicas)]
			failedSeen += scrapeFailed(ctx, r.addr)
			if err := r.p.stop(20 * time.Second); err != nil {
				fmt.Fprintf(d.out, "rolling restart: FAILED: %v\n", err)
				failed++
			}
			if err := start(r); err != nil {
				fmt.Fprintf(d.out, "rolling restart: FAILED: %v\n", err)
				return passed, failed + 1
			}
			turn++
			next = now.Add(restartEvery)
		}
		pause(ctx, 500*time.Millisecond)
	}
	elapsed := time.Since(began)
	for _, r := range replicas[1:] {
		failedSeen += scrapeFailed(ctx, r.addr)
		_ = r.p.stop(20 * time.Second)
	}
	failedSeen += scrapeFailed(ctx, replicas[0].addr)
	d.primary = replicas[0].p
	d.churn = apisim.Churn{}
	problems := d.converge(ctx)

	var reconciles, runsFailed, complete int64
	_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos_river".river_job WHERE kind = 'usersync_reconcile'`).Scan(&reconciles)
	_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos".sync_runs WHERE status = 'failed'`).Scan(&runsFailed)
	ids, newest := completeSnapshots(filepath.Join(snapDir, schemaName)) // the deployment's folder: <dir>/<USERSYNC_SCHEMA>
	complete = int64(len(ids))
	starts := 0
	for _, r := range replicas {
		starts += r.starts
	}
	// The schedule's ticks, the first start's catch-up, and one tick at each
	// end of the window: a start that runs every reconcile again (as before
	// due) adds one per leader change.
	maxReconciles := int64(elapsed/soakReconcileEvery) + 3
	floor := soakFloor(len(replicas))
	lowest, _ := d.remaining.get()
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{failedSeen == 0, fmt.Sprintf("usersync_runs_total{status=\"failed\"} moved by %g with no fault injected", failedSeen)},
		{runsFailed == 0, fmt.Sprintf("%d runs recorded failed", runsFailed)},
		{reconciles <= maxReconciles, fmt.Sprintf("%d reconcile jobs; the schedule and the starts allow %d", reconciles, maxReconciles)},
		{lowest >= floor, fmt.Sprintf("x-ratelimit-remaining fell to %d, below the budget's floor %d", lowest, floor)},
		{complete >= 1 && complete <= soakSnapshotKeep, fmt.Sprintf("%d complete snapshots kept, want 1 to %d", complete, soakSnapshotKeep)},
		{time.Since(newest) < d.o.converge+2*soakSnapshotEvery+restartEvery, fmt.Sprintf("the newest snapshot is from %s", newest.Format(time.RFC3339))},
	} {
		if !c.ok {
			problems = append(problems, c.what)
		}
	}
	fmt.Fprintf(d.out, "soak: %s, %d worker starts, reconcile jobs %d (at most %d), failed runs %d, lowest remaining %d of %d (floor %d), snapshots kept %d\n",
		elapsed.Round(time.Second), starts, reconciles, maxReconciles, runsFailed, lowest, soakRateLimit, floor, complete)
	if len(problems) > 0 {
		fmt.Fprintf(d.out, "soak: FAILED: %s\n", strings.Join(problems, "; "))
		failed++
	} else {
		passed++
	}
	if err := d.primary.stop(15 * time.Second); err != nil {
		fmt.Fprintf(d.out, "final stop: FAILED: %v\n", err)
		failed++
	}
	return passed, failed
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
