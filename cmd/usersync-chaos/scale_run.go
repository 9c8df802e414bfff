package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
)

// scaleRun is the state of one scale run. Its times are the database's
// clock, as are the runs' and jobs' it is compared with.
type scaleRun struct {
	d          *driver
	replicas   []*replica
	peak       map[int]int64 // the highest VmHWM of each replica's processes, bytes
	steady     map[int]int64 // the highest VmRSS sampled once every account was mirrored
	registered time.Duration // registering every account, wall
	began      time.Time     // the workers started
	mirrored   time.Time     // every account first mirrored
	frozen     time.Time     // the churn stopped
	ended      time.Time     // every account converged, or the bound passed
	restarts   int
	cost       scaleCost // per kind of job (scale_cost.go)
}

// register writes each account's token to a file and adds the accounts
// through the CLI, as an operator would, a few commands at once.
func (s *scaleRun) register(ctx context.Context) error {
	d := s.d
	dir := filepath.Join(d.tmp, "tokens")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	work := make(chan *scaleAccount)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		done int
	)
	began := time.Now()
	for range d.o.scale.addParallel {
		wg.Go(func() {
			for a := range work {
				err := s.add(ctx, dir, a)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				if done++; done%100 == 0 && done < len(d.scaleAccounts) {
					fmt.Fprintf(d.out, "scale: %d accounts registered in %s\n", done, time.Since(began).Round(time.Second))
				}
				mu.Unlock()
			}
		})
	}
	for _, a := range d.scaleAccounts {
		a.apiURL = d.srv.URL + apisim.AccountsPath + a.name
		work <- a
	}
	close(work)
	wg.Wait()
	s.registered = time.Since(began)
	fmt.Fprintf(d.out, "scale: %d accounts registered in %s\n", len(d.scaleAccounts), s.registered.Round(time.Second))
	return errors.Join(errs...)
}

// add runs usersync accounts add for one account, timing it.
func (s *scaleRun) add(ctx context.Context, dir string, a *scaleAccount) error {
	file := filepath.Join(dir, a.name)
	if err := os.WriteFile(file, []byte(a.token+"\n"), 0o600); err != nil {
		return err
	}
	began := time.Now()
	// --no-views: the workers' job usersync_views remakes the union views once,
	// where each add would remake them over every account (N² in all).
	out, err := s.d.usersync(ctx, "accounts", "add", a.name, "--api-url", a.apiURL, "--api-token-file", file, "--no-views")
	a.addTook = time.Since(began)
	if err != nil {
		return fmt.Errorf("accounts add %s: %w: %s", a.name, err, lastLine(out))
	}
	return nil
}

// dbNow is the database's clock.
func (s *scaleRun) dbNow(ctx context.Context) time.Time {
	var t time.Time
	if err := retry(ctx, func() error { return s.d.pool.QueryRow(ctx, `SELECT now()`).Scan(&t) }); err != nil {
		return time.Now()
	}
	return t
}

func (s *scaleRun) startReplicas(ctx context.Context) error {
	s.began = s.dbNow(ctx)
	s.startCPU(ctx)
	for i := range s.d.o.scale.replicas {
		r := &replica{}
		s.replicas = append(s.replicas, r)
		if err := s.start(i); err != nil {
			return err
		}
	}
	return nil
}

func (s *scaleRun) start(i int) error {
	p, err := s.d.startWorker()
	s.replicas[i].p = p
	s.replicas[i].starts++
	s.cost.started(i, p)
	return err
}

// loop runs the fleet until every account is first mirrored (then the
// revoked accounts' tokens are revoked) and for -after more, restarting
// the replicas in turn every -restart-every.
func (s *scaleRun) loop(ctx context.Context) []string {
	so := s.d.o.scale
	pending := s.d.allSchemas()
	deadline := time.Now().Add(so.convergeMax + time.Duration(so.large*so.largeUsers/2000)*time.Second)
	var until time.Time
	nextRestart := time.Now().Add(so.restartEvery)
	lastPoll := time.Time{}
	var problems []string
	for ctx.Err() == nil {
		s.sample()
		if s.mirrored.IsZero() && time.Since(lastPoll) > 2*time.Second {
			lastPoll = time.Now()
			pending = s.unsynced(ctx, pending, time.Time{})
			if len(pending) == 0 {
				s.mirrored = s.dbNow(ctx)
				until = time.Now().Add(so.after)
				s.revoke()
				s.steadyBegins(ctx)
			} else if time.Now().After(deadline) {
				return append(problems, fmt.Sprintf("%d accounts never mirrored: %s", len(pending), strings.Join(first(pending, 5), ", ")))
			}
		}
		s.logStatementsUntilDue(ctx)
		if !until.IsZero() && time.Now().After(until) {
			break
		}
		if so.restartEvery > 0 && time.Now().After(nextRestart) {
			problems = append(problems, s.rollingRestart()...)
			nextRestart = time.Now().Add(so.restartEvery)
		}
		pause(ctx, 500*time.Millisecond)
	}
	return problems
}

// first is at most n of names.
func first(names []string, n int) []string { return names[:min(n, len(names))] }

// revoke revokes the grants of the revoked accounts.
func (s *scaleRun) revoke() {
	for _, a := range s.d.scaleAccounts {
		if a.revoked {
			a.server.RevokeTokens()
		}
	}
	fmt.Fprintf(s.d.out, "scale: every account mirrored %s after the workers started; tokens revoked: %s\n",
		s.mirrored.Sub(s.began).Round(100*time.Millisecond), s.d.scaleNames(func(a *scaleAccount) bool { return a.revoked }))
}

// allSchemas is every account's schema, the default account's first.
func (d *driver) allSchemas() []string {
	out := []string{schemaName}
	for _, a := range d.scaleAccounts {
		out = append(out, a.schema)
	}
	return out
}

// unsynced returns the schemas of pending that have no successful sync
// started after since, in one query.
func (s *scaleRun) unsynced(ctx context.Context, pending []string, since time.Time) []string {
	if len(pending) == 0 {
		return nil
	}
	parts := make([]string, len(pending))
	for i, sc := range pending {
		parts[i] = fmt.Sprintf(`SELECT %s::text WHERE NOT EXISTS (SELECT 1 FROM %s.sync_runs WHERE status = 'succeeded'
			AND kind IN ('incremental', 'full') AND started_at > $1)`, quoteLiteral(sc), pgx.Identifier{sc}.Sanitize())
	}
	rows, err := s.d.pool.Query(ctx, strings.Join(parts, " UNION ALL "), since)
	if err != nil {
		return pending
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return pending
	}
	return left
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sample keeps each replica's highest VmHWM so far and, once every
// account was mirrored (the first full syncs are behind), its highest
// VmRSS.
func (s *scaleRun) sample() {
	for i, r := range s.replicas {
		if !r.p.alive() {
			continue
		}
		pid := r.p.cmd.Process.Pid
		s.peak[i] = max(s.peak[i], procStatus(pid, "VmHWM:"))
		if !s.mirrored.IsZero() {
			s.steady[i] = max(s.steady[i], procStatus(pid, "VmRSS:"))
		}
	}
}

// procStatus reads a field of a process's /proc status in kB, in bytes
// (0 when it cannot).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// rollingRestart stops each replica with SIGTERM, waits for it, and starts
// it again, one after the other, as a deploy does.
func (s *scaleRun) rollingRestart() []string {
	var problems []string
	for i, r := range s.replicas {
		s.sample()
		began := time.Now()
		if err := r.p.stop(scaleShutdown); err != nil {
			problems = append(problems, fmt.Sprintf("replica %d: %v", i, err))
		}
		if err := s.start(i); err != nil {
			return append(problems, err.Error())
		}
		fmt.Fprintf(s.d.out, "scale: restarted replica %d (stopped in %s)\n", i, time.Since(began).Round(100*time.Millisecond))
	}
	s.restarts++
	return problems
}

// scaleShutdown bounds a replica's stop: USERSYNC_SHUTDOWN_TIMEOUT and a
// margin.
const scaleShutdown = 40 * time.Second

// stopReplicas stops every replica, after reading its peak RSS.
func (s *scaleRun) stopReplicas() []string {
	var problems []string
	s.sample()
	for i, r := range s.replicas {
		if err := r.p.stop(scaleShutdown); err != nil {
			problems = append(problems, fmt.Sprintf("final stop of replica %d: %v", i, err))
		}
	}
	return problems
}
