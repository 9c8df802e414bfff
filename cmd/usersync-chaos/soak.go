package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
)

// Soak settings: weeks of schedules in minutes. Each is chosen so that the
// check it serves can fail.
const (
	// The reconcile runs on a wall-clock cron schedule, so its ticks do not
	// move when the leader changes and the soak can count them.
	soakReconcileSpec  = "*/3 * * * *"
	soakReconcileEvery = 3 * time.Minute
	soakSnapshotEvery  = 15 * time.Second
	soakSnapshotKeep   = 3
	// soakRateLimit per soakRateWindow, of which soakBudget is usersync's:
	// 20 requests per 10 s, fewer than the syncs every 2 s, the reconciles
	// and the per-team listings ask for, so the clients must pace and the
	// remaining count must reach the floor.
	soakRateLimit  = 40
	soakRateWindow = 10 * time.Second
	soakBudget     = 0.5
	// soakBackfillLatency slows every response while the backfill runs:
	// its 15 user pages, one after the other, then hold the sync lock for
	// over soakBackfillHold while a sync comes due every 2 s.
	soakBackfillLatency = 5 * time.Second
	soakBackfillHold    = time.Minute
	// soakPacedWithin: a soak this long or longer must see the budget pace.
	soakPacedWithin = 3 * time.Minute
	// soakShutdown exceeds the longest pacing wait (a window), so a
	// stopping worker's runs end after their page in flight.
	soakShutdown = 15 * time.Second
)

// soakRestartOffsets are when, after each reconcile tick, the replicas are
// restarted: all before the last minute of the period, where the overdue
// rule lets a start insert a reconcile (a tick less than the slack away).
// A start that runs the reconcile again shows in the count.
var soakRestartOffsets = []time.Duration{20 * time.Second, 50 * time.Second, 80 * time.Second}

// soakKept is the x-ratelimit-remaining USERSYNC_API_BUDGET keeps for
// others: pacing stops each window there, so the lowest remaining reaches it.
func soakKept() int { return jsonapi.Kept(soakRateLimit, soakBudget) }

// soakFloor is the lowest x-ratelimit-remaining the soak accepts with n
// replicas: soakKept less two per replica, which may have requests in
// flight past the reading that paced them. docs/benchmarks.md cites it
// (TestBenchmarksCiteTheSoakFloor).
func soakFloor(n int) int { return soakKept() - 2*n }

// replica is one of the soak's two workers, on its own HTTP port.
type replica struct {
	p      *proc
	addr   string
	starts int
}

// soakRun is the state of one soak.
type soakRun struct {
	d          *driver
	sched      jobs.Schedule
	replicas   []*replica
	began      time.Time
	failedSeen float64
	// the backfill: queued when, and whether its run has ended.
	backfillAt   time.Time
	backfillDone bool
	turn         int
	// ended is when the soak's events ended: the final stops and the
	// converging that follow are not timed against the reconcile ticks.
	ended time.Time
}

// soak runs two worker replicas against the changing simulator for o.soak
// with rolling restarts, a long backfill holding the lock while syncs are
// due, a rate-limit budget that must pace, a reconcile and a snapshot
// schedule, and teams sent as links only for the middle third; then it
// converges and checks what months of operation need: the warehouse equals
// the simulator, no run failed, reconciles ran as scheduled and no start
// added one, the budget's floor was reached and held, the backfill held the
// lock for a minute without a sync slipping in, no job is stuck, and
// snapshots are within retention.
func (d *driver) soak(ctx context.Context) (passed, failed int) {
	sched, err := jobs.ParseSchedule("reconcile", soakReconcileSpec, time.Second)
	if err != nil {
		fmt.Fprintf(d.out, "soak: %v\n", err)
		return 0, 1
	}
	snapDir := filepath.Join(d.tmp, "snapshots")
	d.env = append(d.env, "USERSYNC_RECONCILE_SCHEDULE="+soakReconcileSpec,
		"USERSYNC_SNAPSHOT_SCHEDULE=@every "+soakSnapshotEvery.String(), "USERSYNC_SNAPSHOT_DIR="+snapDir,
		"USERSYNC_SNAPSHOT_AFTER_SYNC=true", fmt.Sprintf("USERSYNC_SNAPSHOT_KEEP=%d", soakSnapshotKeep), "USERSYNC_SNAPSHOT_KEEP_FOR=0",
		fmt.Sprintf("USERSYNC_API_BUDGET=%g", soakBudget), "USERSYNC_SHUTDOWN_TIMEOUT="+soakShutdown.String(), "USERSYNC_LOG_LEVEL=info",
		// The backfill must hold the lock through one slice (the soak stops workers gently, so no
		// job waits for the rescuer), and the @every 2s syncs are scheduled by a tick a second.
		"USERSYNC_TIME_SLICE=2m", "USERSYNC_FLEET_TICK=1s")
	s := &soakRun{d: d, sched: sched, replicas: make([]*replica, 2), began: time.Now()}
	s.knobs(false)
	for i := range s.replicas {
		s.replicas[i] = &replica{addr: freeLoopback(ctx)}
		if err := s.start(s.replicas[i]); err != nil {
			fmt.Fprintf(d.out, "starting a worker: %v\n", err)
			return 0, 1
		}
	}
	failed += s.loop(ctx)
	// Nor does the final stop drain the backfill's run (a short soak ends
	// before it does).
	for !s.backfillAt.IsZero() && !s.backfillDone && ctx.Err() == nil {
		failed += s.backfill(ctx, time.Now())
		pause(ctx, 500*time.Millisecond)
	}
	s.ended = time.Now()
	elapsed := s.ended.Sub(s.began)
	for _, r := range s.replicas[1:] {
		s.failedSeen += scrapeFailed(ctx, r.addr)
		_ = r.p.stop(soakShutdown + 10*time.Second)
	}
	s.failedSeen += scrapeFailed(ctx, s.replicas[0].addr)
	d.primary = s.replicas[0].p
	d.churn = apisim.Churn{}
	problems := d.converge(ctx)
	figures, more := s.check(ctx, elapsed, snapDir)
	problems = append(problems, more...)
	fmt.Fprintf(d.out, "soak: %s\n", figures)
	if len(problems) > 0 {
		fmt.Fprintf(d.out, "soak: FAILED: %s\n", strings.Join(problems, "; "))
		failed++
	} else {
		passed++
	}
	if err := d.primary.stop(soakShutdown + 10*time.Second); err != nil {
		fmt.Fprintf(d.out, "final stop: FAILED: %v\n", err)
		failed++
	}
	return passed, failed
}

// loop runs the soak's schedule of events until o.soak has passed, and
// returns how many of them failed.
func (s *soakRun) loop(ctx context.Context) (failed int) {
	d := s.d
	linksOnlyAt, linksOffAt := s.began.Add(d.o.soak/3), s.began.Add(2*d.o.soak/3)
	next := nextRestart(s.sched, s.began)
	for time.Since(s.began) < d.o.soak && ctx.Err() == nil {
		now := time.Now()
		failed += s.backfill(ctx, now)
		switch {
		case now.After(linksOnlyAt) && now.Before(linksOffAt):
			s.knobs(true)
		case now.After(linksOffAt):
			s.knobs(false)
		}
		if now.After(next) {
			// The backfill's run keeps the lock unbroken: no restart
			// drains it meanwhile (a paused run resumed later is one
			// sync_runs row, with other runs in its pause).
			if s.backfillAt.IsZero() || s.backfillDone {
				if err := s.restart(ctx); err != nil {
					fmt.Fprintf(d.out, "rolling restart: FAILED: %v\n", err)
					failed++
				}
			}
			next = nextRestart(s.sched, time.Now())
		}
		pause(ctx, 500*time.Millisecond)
	}
	return failed
}

// knobs sets the soak's simulator knobs; linksOnly sends teams as links.
func (s *soakRun) knobs(linksOnly bool) {
	_ = s.d.sim.UpdateKnobs(func(k *apisim.Knobs) {
		k.Churn, k.RateLimit, k.RateLimitWindow, k.TeamsLinksOnly = s.d.churn, soakRateLimit, soakRateWindow, linksOnly
	})
}

func (s *soakRun) start(r *replica) error {
	p, err := s.d.startWorker("USERSYNC_HTTP_ADDR=" + r.addr)
	r.p = p
	r.starts++
	return err
}

// restart restarts every replica, one after the other, as a deploy does:
// whichever leads, the leader changes.
func (s *soakRun) restart(ctx context.Context) error {
	var errs []error
	for i := range s.replicas {
		r := s.replicas[(s.turn+i)%len(s.replicas)]
		s.failedSeen += scrapeFailed(ctx, r.addr)
		began := time.Now()
		if err := r.p.stop(soakShutdown + 10*time.Second); err != nil {
			errs = append(errs, err)
		}
		s.event("restarted replica %d (stopped in %s)", (s.turn+i)%len(s.replicas), time.Since(began).Round(100*time.Millisecond))
		if err := s.start(r); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	s.turn++
	return errors.Join(errs...)
}

// event prints a line saying when, in the soak, something happened.
func (s *soakRun) event(format string, args ...any) {
	fmt.Fprintf(s.d.out, "soak: +%s %s\n", time.Since(s.began).Round(time.Second), fmt.Sprintf(format, args...))
}

// backfill queues a full backfill a quarter into the soak, with every
// response slowed so that its run holds the lock for over a minute while
// syncs come due; the latency goes once its run has ended (or after five
// minutes, in which case the check reports it).
func (s *soakRun) backfill(ctx context.Context, now time.Time) (failed int) {
	d := s.d
	switch {
	case s.backfillAt.IsZero() && now.After(s.began.Add(d.o.soak/4)):
		_ = d.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Latency = soakBackfillLatency })
		s.backfillAt = now
		s.event("queueing a full backfill, every response %s late", soakBackfillLatency)
		if out, err := d.usersync(ctx, "backfill", "--full"); err != nil {
			fmt.Fprintf(d.out, "queueing the backfill: FAILED: %v: %s\n", err, lastLine(out))
			failed++
		}
	case !s.backfillAt.IsZero() && !s.backfillDone:
		var ended int64
		_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos".sync_runs r JOIN "chaos_river".river_job j ON j.id = r.job_id
			WHERE j.kind = 'usersync_backfill' AND r.finished_at IS NOT NULL`).Scan(&ended)
		if ended > 0 || now.After(s.backfillAt.Add(5*time.Minute)) {
			_ = d.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Latency = 0 })
			s.backfillDone = true
			s.event("the backfill's run ended (or 5 minutes passed): latency off")
		}
	}
	return failed
}

// nextRestart is the first of soakRestartOffsets after a reconcile tick
// that lies after t.
func nextRestart(sched jobs.Schedule, t time.Time) time.Time {
	tick := sched.Next(t.Add(-soakReconcileEvery)) // the last tick at or before t
	for range 2 {
		for _, off := range soakRestartOffsets {
			if at := tick.Add(off); at.After(t) {
				return at
			}
		}
		tick = sched.Next(tick)
	}
	return t.Add(soakRestartOffsets[0])
}

// reconcileTicks counts the ticks of sched in (from, to].
func reconcileTicks(sched jobs.Schedule, from, to time.Time) int64 {
	var n int64
	for t := sched.Next(from); !t.After(to); t = sched.Next(t) {
		n++
	}
	return n
}
