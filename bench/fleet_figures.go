package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/bench/jobcost"
)

// fleetFigures are what the fleet mode measured.
type fleetFigures struct {
	window, statementsWindow time.Duration
	cpu                      jobcost.Costs // the first window's CPU and jobs
	stmts                    jobcost.Costs // the second window's statements and jobs
	app, server              time.Duration // the whole worker's and server's CPU in the first window
	commits, classInserts    int64         // the whole database's, in the first window
	statements, logCommits   int           // logged in the second window, in all
	temps                    int           // CREATE TEMP TABLE logged in the second window
}

// dbStats are the whole database's counters: transactions committed and
// rows inserted into pg_class (a temporary table is one, or more with its
// indexes and TOAST table).
func (r *fleetRun) dbStats(ctx context.Context) (commits, classInserts int64, err error) {
	err = r.b.pool.QueryRow(ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		(SELECT n_tup_ins FROM pg_stat_sys_tables WHERE relid = 'pg_class'::regclass)`).Scan(&commits, &classInserts)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the database's statistics: %w", err)
	}
	return commits, classInserts, nil
}

// measure runs the two windows, stops the worker, and shares the costs
// among the jobs.
func (r *fleetRun) measure(ctx context.Context) (*fleetFigures, error) {
	f := &fleetFigures{cpu: jobcost.Costs{}, stmts: jobcost.Costs{}}
	c0, i0, err := r.dbStats(ctx)
	if err != nil {
		return nil, err
	}
	pid := r.worker.Process.Pid
	from := time.Now()
	sampler := jobcost.StartSampler(func() []int { return []int{pid} }, r.b.postmaster, r.o.sampled)
	time.Sleep(r.o.window)
	samples := sampler.Stop()
	to := time.Now()
	c1, i1, err := r.dbStats(ctx)
	if err != nil {
		return nil, err
	}
	f.window, f.commits, f.classInserts = to.Sub(from), c1-c0, i1-i0
	if n := len(samples); n > 1 {
		f.app, f.server = samples[n-1].App-samples[0].App, samples[n-1].Server-samples[0].Server
	}
	var stmts []jobcost.Statement
	from2, to2 := to, to
	if r.o.statements > 0 {
		stop, err := jobcost.StatementLog(ctx, r.b.pool)
		if err != nil {
			return nil, err
		}
		from2 = time.Now()
		time.Sleep(r.o.statements)
		to2 = time.Now()
		if stmts, err = stop(ctx); err != nil {
			return nil, err
		}
	}
	r.stopWorker() // every job of the windows finalized
	jobs, err := r.jobs(ctx, from, to2)
	if err != nil {
		return nil, err
	}
	f.cpu.Attribute(samples, jobs)
	f.cpu.Finished(jobs, from, to)
	f.statementsWindow = to2.Sub(from2)
	f.statements, f.logCommits, f.temps = f.stmts.Count(stmts, jobs, from2, to2)
	f.stmts.Finished(jobs, from2, to2)
	return f, nil
}

// asked is how many jobs of a kind a second the schedules ask for.
func (o fleetOptions) asked(kind string) float64 {
	per := func(d time.Duration, n int) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	switch kind {
	case "sync":
		return per(o.syncEvery, o.accounts)
	case "reconcile":
		return per(o.reconcile, o.accounts)
	case "snapshot":
		return per(o.snapshot, o.accounts)
	case "due":
		return per(o.tick, 1)
	case "views":
		return per(max(3*o.tick, 10*time.Second), 1) // every three ticks, at least 10 s
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// print writes the two tables, in Markdown, and a summary line for
// bench/fleet-compare.sh.
func (f *fleetFigures) print(w io.Writer, o fleetOptions) {
	fmt.Fprintf(w, "%d accounts of %d users, nothing changing, syncs @every %s, fleet tick %s; CPU over %s, statements over %s\n\n",
		o.accounts, o.users, o.syncEvery, o.tick, f.window.Round(time.Second), f.statementsWindow.Round(time.Second))
	asked := map[string]float64{}
	for _, k := range jobcost.Kinds {
		asked[k.Kind] = o.asked(k.Kind)
	}
	jobcost.WriteTable(w, f.cpu, f.stmts, asked, f.window, f.statementsWindow)
	f.printWhole(w)
	for _, k := range []string{"sync", "due", jobcost.Between} {
		if c := f.stmts[k]; c != nil && o.top > 0 {
			unit := "per job"
			if k == jobcost.Between {
				c = &jobcost.Cost{Committers: c.Committers, Jobs: max(int(f.statementsWindow.Seconds()), 1)}
				unit = "a second"
			}
			fmt.Fprintf(w, "\nwhere the commits of %s come from (commits %s, statement):\n", k, unit)
			for _, l := range c.Top(o.top) {
				fmt.Fprintln(w, "    "+l)
			}
		}
	}
}

// printWhole writes the whole processes' and database's figures per sync
// run: everything the worker and the server did in the window (River, the
// tick and the views included) over the syncs that finished in it.
func (f *fleetFigures) printWhole(w io.Writer) {
	syncs, syncs2 := 0, 0
	if c := f.cpu["sync"]; c != nil {
		syncs = c.Jobs
	}
	if c := f.stmts["sync"]; c != nil {
		syncs2 = c.Jobs
	}
	each := func(v float64, n int) float64 { return v / float64(max(n, 1)) }
	fmt.Fprintf(w, "\n| whole worker and database, per sync run | value |\n|---|---:|\n")
	fmt.Fprintf(w, "| syncs finished in the window | %d |\n", syncs)
	fmt.Fprintf(w, "| usersync CPU ms (the whole process) | %.1f |\n", each(ms(f.app), syncs))
	fmt.Fprintf(w, "| PostgreSQL CPU ms (the whole server) | %.1f |\n", each(ms(f.server), syncs))
	fmt.Fprintf(w, "| transactions committed (pg_stat_database.xact_commit, River's included) | %.2f |\n", each(float64(f.commits), syncs))
	fmt.Fprintf(w, "| rows inserted into pg_class (temporary tables and their indexes) | %.2f |\n", each(float64(f.classInserts), syncs))
	fmt.Fprintf(w, "| statements logged (the second window) | %.1f |\n", each(float64(f.statements), syncs2))
	fmt.Fprintf(w, "| commits in the statement log (COMMIT, or a statement outside a transaction) | %.1f |\n", each(float64(f.logCommits), syncs2))
	fmt.Fprintf(w, "| CREATE TEMP TABLE logged | %.2f |\n", each(float64(f.temps), syncs2))
	sync, ssync := f.cpu["sync"], f.stmts["sync"]
	if sync == nil {
		sync = &jobcost.Cost{}
	}
	if ssync == nil {
		ssync = &jobcost.Cost{}
	}
	fmt.Fprintf(w, "\nsummary: syncs=%d whole_usersync_ms=%.2f whole_pg_ms=%.2f commits=%.2f pg_class_ins=%.2f statements=%.1f temp_tables=%.2f sync_usersync_ms=%.2f sync_pg_ms=%.2f sync_statements=%.1f sync_commits=%.1f\n",
		syncs, each(ms(f.app), syncs), each(ms(f.server), syncs), each(float64(f.commits), syncs), each(float64(f.classInserts), syncs),
		each(float64(f.statements), syncs2), each(float64(f.temps), syncs2), each(ms(sync.App), sync.Jobs), each(ms(sync.Server), sync.Jobs),
		each(ssync.Statements, ssync.Jobs), each(ssync.Commits, ssync.Jobs))
}
