package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// scaleRunRow is one row of an account's sync_runs.
type scaleRunRow struct {
	kind, status    string
	started         time.Time
	finished        *time.Time
	pages, requests int64
	err             *string
}

// accountRuns are an account's runs, read from its schema.
type accountRuns struct {
	name, schema string
	acct         *scaleAccount // nil for the default account
	runs         []scaleRunRow
}

// worst is the largest of a figure over the accounts, with its account.
type worst struct {
	account string
	value   time.Duration
}

func (w *worst) see(account string, v time.Duration) {
	if w.account == "" || v > w.value {
		w.account, w.value = account, v
	}
}

// scaleFigures are what the scale run prints.
type scaleFigures struct {
	accounts, users           int
	registered                time.Duration
	addMedian, addP95, addMax time.Duration
	firstMirrored             time.Duration
	staleHealthy, staleFaulty worst
	reqHealthy, minHealthy    int64
	reqFaulty, minFaulty      int64
	worstRatio                float64
	worstRatioAccount         string
	peaks, steady             []int64
	starts                    []int
	restarts                  int
	pgClass, dbSize           int64
	jobs, peakJobs10s         int64
	kept                      int64 // river_job rows at the end
	tickMedian, tickMax       time.Duration
	window                    time.Duration
	runs                      []*accountRuns
}

// measure reads the figures from the database, the simulator and the
// replicas' peaks.
func (s *scaleRun) measure(ctx context.Context) (*scaleFigures, error) {
	d := s.d
	f := &scaleFigures{accounts: len(d.scaleAccounts) + 1, users: len(d.sim.UserIDs()), registered: s.registered, restarts: s.restarts}
	var took []time.Duration
	for _, a := range d.scaleAccounts {
		f.users += len(a.server.UserIDs())
		took = append(took, a.addTook)
	}
	slices.Sort(took)
	f.addMedian, f.addP95, f.addMax = took[len(took)/2], took[len(took)*95/100], took[len(took)-1]
	for i, r := range s.replicas {
		f.peaks, f.steady, f.starts = append(f.peaks, s.peak[i]), append(f.steady, s.steady[i]), append(f.starts, r.starts)
	}
	if err := s.readRuns(ctx, f); err != nil {
		return nil, err
	}
	s.timings(f)
	s.requests(f)
	if err := d.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_class), pg_database_size(current_database())`).Scan(&f.pgClass, &f.dbSize); err != nil {
		return nil, fmt.Errorf("reading the catalog's size: %w", err)
	}
	f.window = s.ended.Sub(s.began)
	err := d.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0), coalesce(max(n), 0) FROM (
			SELECT count(*) AS n FROM "chaos_river".river_job WHERE state = 'completed' AND finalized_at BETWEEN $1 AND $2
			GROUP BY date_bin('10 seconds', finalized_at, $1)) b`, s.began, s.ended).Scan(&f.jobs, &f.peakJobs10s)
	if err == nil {
		err = s.tickCost(ctx, f)
	}
	if err != nil {
		return nil, fmt.Errorf("counting the jobs: %w", err)
	}
	return f, nil
}

// tickCost reads how long the fleet's ticks (usersync_due) took, from
// their jobs, and how many jobs the database keeps: the tick reads when
// each account's jobs were last created from all of them.
func (s *scaleRun) tickCost(ctx context.Context, f *scaleFigures) error {
	var median, most float64
	err := s.d.pool.QueryRow(ctx, `SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY d), 0), coalesce(max(d), 0)
		FROM (SELECT extract(epoch FROM finalized_at - attempted_at) AS d FROM "chaos_river".river_job
			WHERE kind = 'usersync_due' AND state = 'completed' AND finalized_at BETWEEN $1 AND $2) t`, s.began, s.ended).Scan(&median, &most)
	if err != nil {
		return err
	}
	f.tickMedian, f.tickMax = time.Duration(median*float64(time.Second)), time.Duration(most*float64(time.Second))
	return s.d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos_river".river_job`).Scan(&f.kept)
}

// readRuns reads every account's sync_runs.
func (s *scaleRun) readRuns(ctx context.Context, f *scaleFigures) error {
	all := append([]*scaleAccount{nil}, s.d.scaleAccounts...)
	for _, a := range all {
		ar := &accountRuns{name: "default", schema: schemaName, acct: a}
		if a != nil {
			ar.name, ar.schema = a.name, a.schema
		}
		rows, err := s.d.pool.Query(ctx, `SELECT kind, status, started_at, finished_at, pages, requests, error
			FROM `+pgx.Identifier{ar.schema}.Sanitize()+`.sync_runs ORDER BY started_at`)
		if err != nil {
			return fmt.Errorf("reading %s's runs: %w", ar.name, err)
		}
		ar.runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (scaleRunRow, error) {
			var r scaleRunRow
			return r, row.Scan(&r.kind, &r.status, &r.started, &r.finished, &r.pages, &r.requests, &r.err)
		})
		if err != nil {
			return fmt.Errorf("reading %s's runs: %w", ar.name, err)
		}
		f.runs = append(f.runs, ar)
	}
	return nil
}

// synced says whether a run is a successful sync (what keeps an account
// fresh).
func (r scaleRunRow) synced() bool {
	return r.status == "succeeded" && r.finished != nil && (r.kind == "incremental" || r.kind == "full")
}

// timings sets the time until every account was first mirrored and each
// account's worst staleness: the longest gap between two successful syncs
// (or from the last to the churn's stop) beyond the sync schedule's
// interval, from the first successful sync on. The revoked accounts stop
// syncing by design and are left out.
func (s *scaleRun) timings(f *scaleFigures) {
	every := s.d.o.scale.syncEvery
	for _, ar := range f.runs {
		var done []time.Time
		for _, r := range ar.runs {
			if r.synced() {
				done = append(done, *r.finished)
			}
		}
		if len(done) == 0 {
			continue
		}
		slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
		f.firstMirrored = max(f.firstMirrored, done[0].Sub(s.began))
		if ar.acct != nil && ar.acct.revoked {
			continue
		}
		gap := s.frozen.Sub(done[len(done)-1])
		for i := 1; i < len(done); i++ {
			gap = max(gap, done[i].Sub(done[i-1]))
		}
		if ar.acct == nil || ar.acct.healthy() {
			f.staleHealthy.see(ar.name, gap-every)
		} else {
			f.staleFaulty.see(ar.name, gap-every)
		}
	}
}

// requests sets the API requests the simulator counted against the least
// that the successful runs needed: the three dimension lists and the users
// pages each walked (at least one).
func (s *scaleRun) requests(f *scaleFigures) {
	for _, ar := range f.runs {
		var least int64
		for _, r := range ar.runs {
			if r.status == "succeeded" {
				least += 3 + max(r.pages, 1)
			}
		}
		var got int64
		if ar.acct == nil {
			got = s.d.sim.Stats().Requests
		} else {
			got = ar.acct.server.Stats().Requests
		}
		switch {
		case ar.acct == nil || ar.acct.healthy():
			f.reqHealthy, f.minHealthy = f.reqHealthy+got, f.minHealthy+least
			if ratio := float64(got) / float64(max(least, 1)); ratio > f.worstRatio {
				f.worstRatio, f.worstRatioAccount = ratio, ar.name
			}
		case ar.acct.fault >= 0:
			f.reqFaulty, f.minFaulty = f.reqFaulty+got, f.minFaulty+least
		}
	}
}

// print writes the table, in Markdown (docs/benchmarks.md holds it as
// printed).
func (f *scaleFigures) print(w io.Writer, so scaleOptions) {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	row := func(what, format string, args ...any) {
		fmt.Fprintf(w, "| %s | %s |\n", what, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "\n| Figure | Value |\n|---|---|\n")
	row("accounts (users)", "%d registered + the default account (%d users in all; %d of %d, %d of %d, the default's 200 and those the churn created)",
		f.accounts-1, f.users, so.accounts-so.large, so.accountUsers, so.large, so.largeUsers)
	row("registering (`accounts add`, migration included)", "%s in all, %d at once; each command %s median, %s p95, %s max",
		f.registered.Round(time.Second), so.addParallel, f.addMedian.Round(10*time.Millisecond), f.addP95.Round(10*time.Millisecond), f.addMax.Round(10*time.Millisecond))
	row("every account first mirrored", "%s after the workers started", f.firstMirrored.Round(100*time.Millisecond))
	row("worst staleness beyond the schedule (@every "+so.syncEvery.String()+")", "healthy: %s (%s); faulty: %s (%s)",
		f.staleHealthy.value.Round(100*time.Millisecond), f.staleHealthy.account, f.staleFaulty.value.Round(100*time.Millisecond), f.staleFaulty.account)
	row("API requests against the least the successful runs needed", "healthy: %d of %d (x%.2f; worst account x%.2f, %s); faulty: %d of %d (x%.2f)",
		f.reqHealthy, f.minHealthy, ratio(f.reqHealthy, f.minHealthy), f.worstRatio, f.worstRatioAccount, f.reqFaulty, f.minFaulty, ratio(f.reqFaulty, f.minFaulty))
	for i, p := range f.peaks {
		row(fmt.Sprintf("peak RSS of worker %d", i), "%s (VmHWM, the highest of its %d processes); %s once every account was mirrored (VmRSS sampled)",
			mib(p), f.starts[i], mib(f.steady[i]))
	}
	row("PostgreSQL catalog", "%d pg_class rows (%d per account), database %s", f.pgClass, f.pgClass/int64(f.accounts), mib(f.dbSize))
	row("jobs River ran", "%d in %s: %.1f a second (peak %.1f over 10 s); %d rolling restarts",
		f.jobs, f.window.Round(time.Second), float64(f.jobs)/max(f.window.Seconds(), 1), float64(f.peakJobs10s)/10, f.restarts)
	row("the fleet's tick (`usersync_due`)", "%s median, %s max, with %d jobs kept", f.tickMedian.Round(time.Millisecond), f.tickMax.Round(time.Millisecond), f.kept)
	fmt.Fprintln(w)
}

func ratio(a, b int64) float64 { return float64(a) / float64(max(b, 1)) }
