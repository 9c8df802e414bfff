package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/usersync/usersync/bench/jobcost"
)

// scaleCost measures what each kind of job costs once every account is
// mirrored (the steady state: no first full sync left), as bench -fleet does
// (docs/sizing.md): the replicas' and the server's CPU sampled all along,
// the database's commits over that window, and every statement logged for
// the first statementsFor of it.
type scaleCost struct {
	mu         sync.Mutex
	pids       map[int]int // each replica's current process
	sampler    *jobcost.Sampler
	postmaster int

	from, to             time.Time // the steady window
	stmtFrom, stmtTo     time.Time
	stopLog              func(context.Context) ([]jobcost.Statement, error)
	stmts                []jobcost.Statement
	commits0, commits    int64
	class0, classInserts int64
	err                  error
}

// statementsFor is how long the scale run logs every statement.
const statementsFor = 10 * time.Second

// startCPU starts sampling the replicas' and the server's CPU.
func (s *scaleRun) startCPU(ctx context.Context) {
	c := &s.cost
	var backend int
	if err := s.d.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		c.err = fmt.Errorf("finding the server's process: %w", err)
		return
	}
	parent, err := jobcost.ParentPid(backend)
	if err != nil {
		c.err = err
		return
	}
	c.postmaster = parent
	c.sampler = jobcost.StartSampler(c.replicaPids, c.postmaster, 10*time.Millisecond)
}

// replicaPids are the replicas' processes now.
func (c *scaleCost) replicaPids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, 0, len(c.pids))
	for _, p := range c.pids {
		out = append(out, p)
	}
	return out
}

// started records replica i's new process.
func (c *scaleCost) started(i int, p *proc) {
	if p == nil || p.cmd.Process == nil {
		return
	}
	c.mu.Lock()
	if c.pids == nil {
		c.pids = map[int]int{}
	}
	c.pids[i] = p.cmd.Process.Pid
	c.mu.Unlock()
}

// steadyBegins starts the steady window and the statement log.
func (s *scaleRun) steadyBegins(ctx context.Context) {
	c := &s.cost
	c.from = time.Now()
	if err := s.d.pool.QueryRow(ctx, dbCounters).Scan(&c.commits0, &c.class0); err != nil {
		c.err = fmt.Errorf("reading the database's statistics: %w", err)
		return
	}
	stop, err := jobcost.StatementLog(ctx, s.d.pool)
	if err != nil {
		c.err = err
		return
	}
	c.stopLog, c.stmtFrom = stop, time.Now()
}

// logStatementsUntilDue ends the statement log once statementsFor has passed.
func (s *scaleRun) logStatementsUntilDue(ctx context.Context) {
	c := &s.cost
	if c.stopLog == nil || time.Since(c.stmtFrom) < statementsFor {
		return
	}
	c.stmtTo = time.Now()
	c.stmts, c.err = c.stopLog(ctx)
	c.stopLog = nil
}

// steadyEnds ends the steady window.
func (s *scaleRun) steadyEnds(ctx context.Context) {
	c := &s.cost
	if c.from.IsZero() || !c.to.IsZero() {
		return
	}
	c.to = time.Now()
	var commits, class int64
	if err := s.d.pool.QueryRow(ctx, dbCounters).Scan(&commits, &class); err != nil {
		c.err = fmt.Errorf("reading the database's statistics: %w", err)
		return
	}
	c.commits, c.classInserts = commits-c.commits0, class-c.class0
	if c.stopLog != nil { // a window shorter than statementsFor
		c.stmtTo = time.Now()
		c.stmts, c.err = c.stopLog(ctx)
		c.stopLog = nil
	}
}

// dbCounters reads the database's transactions committed and rows inserted
// into pg_class (temporary tables).
const dbCounters = `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
	(SELECT n_tup_ins FROM pg_stat_sys_tables WHERE relid = 'pg_class'::regclass)`

// printCost shares the steady window's costs among the jobs that ran in it
// and writes the table per kind of job, then the whole database's per sync.
func (s *scaleRun) printCost(ctx context.Context, w io.Writer) {
	c := &s.cost
	var samples []jobcost.Sample
	if c.sampler != nil {
		samples = c.sampler.Stop()
	}
	switch {
	case c.err != nil:
		fmt.Fprintf(w, "per kind of job: not measured: %v\n", c.err)
		return
	case c.from.IsZero() || c.to.IsZero():
		fmt.Fprintln(w, "per kind of job: not measured: the steady window begins once every account is mirrored, which did not happen in time")
		return
	case len(samples) == 0:
		fmt.Fprintln(w, "per kind of job: not measured: no CPU sample was read")
		return
	}
	var steady []jobcost.Sample
	for _, x := range samples {
		if !x.At.Before(c.from) && !x.At.After(c.to) {
			steady = append(steady, x)
		}
	}
	jobs, err := s.steadyJobs(ctx)
	if err != nil {
		fmt.Fprintf(w, "per kind of job: not measured: %v\n", err)
		return
	}
	cpu, stmts := jobcost.Costs{}, jobcost.Costs{}
	cpu.Attribute(steady, jobs)
	cpu.Finished(jobs, c.from, c.to)
	_, _, temps := stmts.Count(c.stmts, jobs, c.stmtFrom, c.stmtTo)
	stmts.Finished(jobs, c.stmtFrom, c.stmtTo)
	so := s.d.o.scale
	n := float64(so.accounts + 1)
	asked := map[string]float64{"sync": n / so.syncEvery.Seconds(), "reconcile": n / so.reconcileEvery.Seconds(),
		"due": 1 / so.tick.Seconds(), "views": 1 / max(3*so.tick, 10*time.Second).Seconds()}
	window := c.to.Sub(c.from)
	fmt.Fprintf(w, "\nper kind of job, once every account was mirrored (%s; churn on, restarts included; statements over the first %s):\n\n",
		window.Round(time.Second), c.stmtTo.Sub(c.stmtFrom).Round(time.Second))
	jobcost.WriteTable(w, cpu, stmts, asked, window, c.stmtTo.Sub(c.stmtFrom))
	syncs := 0
	if x := cpu["sync"]; x != nil {
		syncs = max(x.Jobs, 1)
	}
	ssyncs := 0
	if x := stmts["sync"]; x != nil {
		ssyncs = max(x.Jobs, 1)
	}
	fmt.Fprintf(w, "\nwhole database per sync run: %.2f transactions committed (xact_commit, River's included), %.2f rows inserted into pg_class, %.2f CREATE TEMP TABLE logged\n",
		float64(c.commits)/float64(max(syncs, 1)), float64(c.classInserts)/float64(max(syncs, 1)), float64(temps)/float64(max(ssyncs, 1)))
}

// steadyJobs reads the jobs that ran within the steady window.
func (s *scaleRun) steadyJobs(ctx context.Context) ([]jobcost.Job, error) {
	rows, err := s.d.pool.Query(ctx, `SELECT replace(kind, 'usersync_', ''), attempted_at, finalized_at FROM "chaos_river".river_job
		WHERE attempted_at IS NOT NULL AND finalized_at IS NOT NULL AND finalized_at >= $1 AND attempted_at <= $2`, s.cost.from, s.cost.to)
	if err != nil {
		return nil, fmt.Errorf("reading the jobs: %w", err)
	}
	defer rows.Close()
	var out []jobcost.Job
	for rows.Next() {
		var j jobcost.Job
		if err := rows.Scan(&j.Kind, &j.Start, &j.End); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
