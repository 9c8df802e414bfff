package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

// run injects the faults in a random order and checks the system after each.
func (d *driver) run(ctx context.Context) (passed, failed int) {
	plan := d.plan()
	var err error
	if d.primary, err = d.startWorker(); err != nil {
		fmt.Fprintf(d.out, "starting the worker: %v\n", err)
		return 0, 1
	}
	if problems := d.converge(ctx); len(problems) > 0 {
		fmt.Fprintf(d.out, "initial sync: FAILED: %s\n", strings.Join(problems, "; "))
		return 0, 1
	}
	for i, f := range plan {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		note, ferr := f.apply(ctx, d)
		problems := d.converge(ctx)
		if ferr != nil {
			problems = append([]string{"the fault itself: " + ferr.Error()}, problems...)
		}
		status := "ok"
		if len(problems) > 0 {
			status = "FAILED: " + strings.Join(problems, "; ")
			failed++
		} else {
			passed++
		}
		fmt.Fprintf(d.out, "fault %2d/%d %-40s %-44s converged in %5.1fs: %s\n", i+1, len(plan), f.name, "("+note+")",
			time.Since(start).Seconds(), status)
	}
	if err := d.primary.stop(15 * time.Second); err != nil {
		fmt.Fprintf(d.out, "final stop: FAILED: %v\n", err)
		failed++
	}
	if problems := d.noJobStuck(ctx, 0); len(problems) > 0 {
		fmt.Fprintf(d.out, "after the last stop: FAILED: %s\n", strings.Join(problems, "; "))
		failed++
	}
	return passed, failed
}

// plan is the faults in a random order: o.kills kills, the rest drawn from
// the other kinds, each at least once when there is room.
func (d *driver) plan() []fault {
	var plan []fault
	for range d.o.kills {
		plan = append(plan, killFault)
	}
	kinds := faultKinds()
	for i := 0; len(plan) < d.o.faults; i++ {
		plan = append(plan, kinds[i%len(kinds)])
	}
	d.rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// converge stops the faults and the churn, makes sure a worker runs, waits
// for a sync that started after the freeze to succeed, and checks every
// invariant. Then the churn resumes.
func (d *driver) converge(ctx context.Context) []string {
	_ = d.sim.SetKnobs(apisim.Knobs{})
	defer func() { _ = d.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Churn = d.churn }) }()
	if !d.primary.alive() {
		p, err := d.startWorker()
		if err != nil {
			return []string{err.Error()}
		}
		d.primary = p
	}
	var mark time.Time
	if err := retry(ctx, func() error { return d.pool.QueryRow(ctx, `SELECT now()`).Scan(&mark) }); err != nil {
		return []string{"database unreachable: " + err.Error()}
	}
	deadline := time.Now().Add(d.o.converge)
	for {
		var n int64
		err := d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos".sync_runs WHERE status = 'succeeded'
			AND kind IN ('incremental', 'full') AND started_at > $1`, mark).Scan(&n)
		if err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return []string{fmt.Sprintf("no sync succeeded within %s of the fault", d.o.converge)}
		}
		pause(ctx, 200*time.Millisecond)
	}
	// Reconcile is part of converging: the API changes some users without
	// moving their updatedAt (a deleted role or profile shows as null), and
	// only a reconcile sees that. It shares the lock with the worker's runs.
	if out, err := d.usersync(ctx, "reconcile", "--wait-lock"); err != nil {
		return []string{fmt.Sprintf("reconcile: %v: %s", err, lastLine(out))}
	}
	problems := syncertest.Compare(ctx, d.sim, d.store)
	problems = append(problems, d.invariants(ctx)...)
	return append(problems, d.noJobStuck(ctx, 30*time.Second)...)
}

// retry runs fn until it succeeds or 20 seconds pass (the database may be
// coming back).
func retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		pause(ctx, 200*time.Millisecond)
	}
}

// invariants checks what must hold whatever happened.
func (d *driver) invariants(ctx context.Context) []string {
	checks := []struct{ what, sql string }{
		{"overlapping version ranges", `SELECT count(*) FROM "chaos".user_versions a JOIN "chaos".user_versions b
			ON a.user_id = b.user_id AND a.version_id < b.version_id
			AND a.valid_from < coalesce(b.valid_to, 'infinity') AND b.valid_from < coalesce(a.valid_to, 'infinity')`},
		{"two consecutive identical versions", `SELECT count(*) FROM "chaos".user_versions a JOIN "chaos".user_versions b
			ON a.user_id = b.user_id AND a.valid_to = b.valid_from AND a.content_hash = b.content_hash`},
		{"users without a current version", `SELECT count(*) FROM "chaos".users u WHERE NOT EXISTS
			(SELECT 1 FROM "chaos".user_versions v WHERE v.user_id = u.id AND v.valid_to IS NULL)`},
		{"current versions that differ from the user", `SELECT count(*) FROM "chaos".users u JOIN "chaos".user_versions v
			ON v.user_id = u.id AND v.valid_to IS NULL WHERE v.content_hash <> u.content_hash`},
		{"a watermark past the committed data", `SELECT count(*) FROM "chaos".sync_state s
			WHERE s.watermark > (SELECT max(updated_at) FROM "chaos".users)`},
		{"runs still marked running", `SELECT count(*) FROM "chaos".sync_runs WHERE status = 'running'
			AND heartbeat_at < now() - interval '2 minutes'`},
	}
	out := syncertest.HistoryProblems(ctx, d.store)
	for _, c := range checks {
		var n int64
		if err := d.pool.QueryRow(ctx, c.sql).Scan(&n); err != nil {
			out = append(out, c.what+": "+err.Error())
		} else if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	return out
}

// noJobStuck checks that no job has been running longer than age without a
// live run behind it (River's stuck-job rescue, set just above the time
// slice that bounds every live run).
func (d *driver) noJobStuck(ctx context.Context, age time.Duration) []string {
	var n int64
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos_river".river_job WHERE state = 'running'
		AND attempted_at < now() - make_interval(secs => $1)`, age.Seconds()).Scan(&n)
	if err != nil {
		return []string{"reading jobs: " + err.Error()}
	}
	if n > 0 {
		return []string{fmt.Sprintf("%d jobs stuck running", n)}
	}
	return nil
}
