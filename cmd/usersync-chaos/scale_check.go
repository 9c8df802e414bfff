package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// converge stops the churn in every account (the faults stay) and waits
// until every account but the revoked ones has a successful sync that
// started after that.
func (s *scaleRun) converge(ctx context.Context) []string {
	d := s.d
	still := func(k *apisim.Knobs) { k.Churn = apisim.Churn{} }
	_ = d.sim.UpdateKnobs(still)
	pending := []string{schemaName}
	for _, a := range d.scaleAccounts {
		_ = a.server.UpdateKnobs(still)
		if !a.revoked {
			pending = append(pending, a.schema)
		}
	}
	s.frozen = s.dbNow(ctx)
	deadline := time.Now().Add(d.o.scale.convergeMax)
	var problems []string
	for ctx.Err() == nil {
		s.sample()
		if pending = s.unsynced(ctx, pending, s.frozen); len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			problems = append(problems, fmt.Sprintf("%d accounts had no successful sync within %s of the churn's stop: %s",
				len(pending), d.o.scale.convergeMax, strings.Join(first(pending, 5), ", ")))
			break
		}
		pause(ctx, time.Second)
	}
	s.ended = s.dbNow(ctx)
	took := s.ended.Sub(s.frozen).Round(100 * time.Millisecond)
	if len(problems) == 0 {
		fmt.Fprintf(d.out, "scale: the churn stopped; every account converged %s later\n", took)
	} else {
		fmt.Fprintf(d.out, "scale: the churn stopped; %d accounts had not converged %s later\n", len(pending), took)
	}
	return problems
}

// check runs the scale run's checks: every account but the revoked ones
// mirrors its simulated API; the revoked accounts failed, their errors
// naming them, and no other healthy account failed a run; no job is stuck.
func (s *scaleRun) check(ctx context.Context, f *scaleFigures) []string {
	d := s.d
	if name := d.o.scale.breakAccount; name != "" {
		if err := s.breakWarehouse(ctx, name); err != nil {
			return []string{err.Error()}
		}
	}
	problems := s.compareAll(ctx)
	if f != nil {
		problems = append(problems, s.failedAlone(f)...)
	}
	problems = append(problems, s.logsNameTheRevoked()...)
	return append(problems, d.noJobStuck(ctx, 0)...)
}

// unionUnitesAll checks that the union views unite every account: the
// accounts were added with --no-views, so the workers' job usersync_views
// made them, within its period (ten seconds at least), which a short run
// may not have waited for yet.
func (s *scaleRun) unionUnitesAll(ctx context.Context) []string {
	var missing []string
	err := retry(ctx, func() error {
		var def string
		if err := s.d.pool.QueryRow(ctx, `SELECT coalesce(max(definition), '') FROM pg_views WHERE schemaname = $1 AND viewname = 'users'`,
			schemaName+"_all").Scan(&def); err != nil {
			return fmt.Errorf("reading the union views: %w", err)
		}
		missing = missing[:0]
		for _, a := range s.d.scaleAccounts {
			if !strings.Contains(def, a.schema+".users") {
				missing = append(missing, a.name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the union view %s_all.users does not unite %d accounts (the workers' job usersync_views did not remake it): %s",
				schemaName, len(missing), strings.Join(first(missing, 5), ", "))
		}
		return nil
	})
	if err != nil {
		return []string{err.Error()}
	}
	return nil
}

// compareAll compares every account's warehouse but the revoked ones'
// with its simulated API, a few accounts at once.
func (s *scaleRun) compareAll(ctx context.Context) []string {
	d := s.d
	type target struct {
		name, schema string
		sim          *apisim.Server
	}
	targets := []target{{"default", schemaName, d.sim}}
	for _, a := range d.scaleAccounts {
		if !a.revoked {
			targets = append(targets, target{a.name, a.schema, a.server})
		}
	}
	found := make([][]string, len(targets))
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range work {
				t := targets[i]
				store, err := warehouse.NewStore(d.pool, t.schema)
				if err != nil {
					found[i] = []string{fmt.Sprintf("account %s: %v", t.name, err)}
					continue
				}
				for _, p := range append(syncertest.Compare(ctx, t.sim, store), syncertest.HistoryProblems(ctx, store)...) {
					found[i] = append(found[i], fmt.Sprintf("account %s's warehouse differs from its API: %s", t.name, p))
				}
			}
		})
	}
	for i := range targets {
		work <- i
	}
	close(work)
	wg.Wait()
	return slices.Concat(found...)
}

// failedAlone checks that every revoked account has a failed run whose
// error is the refused token, and that no healthy account has a failed run.
func (s *scaleRun) failedAlone(f *scaleFigures) []string {
	var problems []string
	for _, ar := range f.runs {
		var failed int
		refused := false
		for _, r := range ar.runs {
			if r.status == "failed" {
				failed++
				refused = refused || (r.err != nil && strings.Contains(*r.err, "401"))
			}
		}
		switch {
		case ar.acct != nil && ar.acct.revoked && !refused:
			problems = append(problems, fmt.Sprintf("revoked account %s has no failed run saying 401 (%d failed runs)", ar.name, failed))
		case (ar.acct == nil || ar.acct.healthy()) && failed > 0:
			problems = append(problems, fmt.Sprintf("healthy account %s has %d failed runs", ar.name, failed))
		}
	}
	return problems
}

// completerRetry is River's line when a batch of job completions failed
// and will be tried again (its completer, within 10 s each time): on an
// overloaded database, a transient error River recovers from by itself.
// Its giving up ("Too many errors; giving up") is a failure like any other.
const completerRetry = "Completer error (will retry after sleep)"

// logsNameTheRevoked checks that the workers' logs name every revoked
// account in a line about its refused token, and that their lines of level
// ERROR name only revoked or faulty accounts. River's completer retries
// are counted and printed, not failed.
func (s *scaleRun) logsNameTheRevoked() []string {
	d := s.d
	files, _ := filepath.Glob(filepath.Join(d.tmp, "worker-*.log"))
	named := map[string]bool{}
	errorsOf := map[string][]string{}
	var retries []string
	for _, file := range files {
		scanLog(file, func(line map[string]any) {
			account, _ := line["account"].(string)
			level, _ := line["level"].(string)
			msg := fmt.Sprint(line["msg"])
			text := fmt.Sprint(line["error"], " ", msg)
			if account != "" && strings.Contains(text, "401") {
				named[account] = true
			}
			switch {
			case level == "ERROR" && account == "" && strings.HasSuffix(msg, completerRetry):
				retries = append(retries, fmt.Sprint(line["err"]))
			case level == "ERROR" && line["check"] != nil: // a start check: which, and why
				errorsOf[account] = append(errorsOf[account], fmt.Sprintf("%s: %v: %v", msg, line["check"], line["detail"]))
			case level == "ERROR":
				errorsOf[account] = append(errorsOf[account], msg)
			}
		})
	}
	if len(retries) > 0 {
		fmt.Fprintf(d.out, "scale: River's completer retried a batch of completions %d times (first error: %s); it never gave up\n",
			len(retries), retries[0])
	}
	var problems []string
	for _, a := range d.scaleAccounts {
		if a.revoked && !named[a.name] {
			problems = append(problems, fmt.Sprintf("no worker log line names revoked account %s with its 401", a.name))
		}
	}
	for name, msgs := range errorsOf {
		if a := d.scaleAccount(name); a == nil || a.healthy() {
			problems = append(problems, fmt.Sprintf("%d worker log lines of level ERROR about account %q, which is healthy (%q)", len(msgs), name, msgs[0]))
		}
	}
	return problems
}

// scaleAccount returns the account named name, nil for none.
func (d *driver) scaleAccount(name string) *scaleAccount {
	for _, a := range d.scaleAccounts {
		if a.name == name {
			return a
		}
	}
	return nil
}

// scanLog calls fn with each JSON line of a worker's log.
func scanLog(file string, fn func(map[string]any)) {
	fh, err := os.Open(file) //nolint:gosec // G304: the driver's own log
	if err != nil {
		return
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			fn(line)
		}
	}
}

// breakWarehouse changes one live user of an account's warehouse, so that
// the checks must find it (-break-account).
func (s *scaleRun) breakWarehouse(ctx context.Context, name string) error {
	schema := schemaName
	if a := s.d.scaleAccount(name); a != nil {
		schema = a.schema
	}
	q := `UPDATE %[1]s.users SET custom1 = 'changed by -break-account'
		WHERE id = (SELECT min(id) FROM %[1]s.users WHERE deleted_at IS NULL)`
	if _, err := s.d.pool.Exec(ctx, fmt.Sprintf(q, pgx.Identifier{schema}.Sanitize())); err != nil {
		return fmt.Errorf("breaking account %s's warehouse: %w", name, err)
	}
	fmt.Fprintf(s.d.out, "scale: changed a user of account %s's warehouse (-break-account)\n", name)
	return nil
}
