package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
)

// checkTimeout bounds the whole of usersync check and of the worker's
// start checks: an API that does not answer is retried for a while, and
// one line saying so beats a command that hangs.
const checkTimeout = 90 * time.Second

func checkCommand() command {
	return command{
		name:    "check",
		summary: "say whether this deployment can work: database, migrations, writes, reader role, API, token, budget, snapshots, schedules",
		details: `Runs every check and prints a line for each: ok or FAIL, what was
checked and what was found, and for a FAIL a line saying how to fix it. A check
that needs one that failed (the token needs the API's settings, the reader role
needs the migrations) fails as not checked. Exits 0 only when every check
passes, 1 otherwise (2 for an invalid setting). It sends one request to the API
(a page of one user; with OAuth, after a token refresh, which rotates the stored
refresh token as every refresh does) and writes and removes a small file in the
deployment's snapshot folder. The worker runs the same checks at start, but for
the database ones it has waited for, and logs the first that fails.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, `print as JSON: {"version": 1, "checks": [{"name", "ok", "detail", "fix"}], "ok": bool}`)
			return func(ctx context.Context, e *env, _ []string) error {
				pool, err := newPool(ctx, e, 4)
				if err != nil {
					return err
				}
				defer pool.Close()
				store, err := warehouse.NewStore(pool, e.cfg.Schema)
				if err != nil {
					return usageError{err}
				}
				c := &checker{e: e, store: store}
				c.run(ctx, true)
				if c.dbOK {
					c.notices = registryNotices(ctx, e, pool)
				}
				return c.report(e.stdout, *asJSON)
			}
		},
	}
}

// checkResult is one check: its name, whether it passed, what was found and,
// when it failed, what to do.
type checkResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
	// after is the check this one needed, which failed (it was not run).
	after string
}

// line is the check's line: "ok database: answers..." or "FAIL token: ...".
func (r checkResult) line() string {
	status := "ok"
	if !r.OK {
		status = "FAIL"
	}
	return fmt.Sprintf("%-4s %s: %s", status, r.Name, r.Detail)
}

// checker runs the checks of usersync check and of the worker's start, in
// order, each check knowing what the earlier ones found.
type checker struct {
	e     *env
	store *warehouse.Store
	// api is the client the API checks use; nil builds one from the
	// settings (the worker gives its own, so that its token is refreshed
	// once, not once for the check and again for the first job).
	api      *jsonapi.Client
	dbOK     bool // the database answers
	migrated bool // and both schemas are current
	results  []checkResult
	// notices say what the registry's rows stored by an earlier release
	// ask of the operator; they fail no check.
	notices []string
}

func (c *checker) pass(name, detail string) {
	c.results = append(c.results, checkResult{Name: name, OK: true, Detail: detail})
}

func (c *checker) fail(name, detail, fix string) {
	c.results = append(c.results, checkResult{Name: name, Detail: detail, Fix: fix})
}

// notChecked fails name for the check it needs, which failed.
func (c *checker) notChecked(name, needs string) {
	c.results = append(c.results, checkResult{Name: name, Detail: "not checked: the " + needs + " check failed",
		Fix: "fix the " + needs + " check first", after: needs})
}

// run runs every check; withDatabase false takes the database as reached
// and migrated (the worker waited for both before it checks).
func (c *checker) run(ctx context.Context, withDatabase bool) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if withDatabase {
		c.checkDatabase(ctx)
		if !c.dbOK {
			c.notChecked("migrations", "database")
		}
		if !c.migrated {
			c.notChecked("writes", "migrations")
		}
	} else {
		c.dbOK, c.migrated = true, true
	}
	c.checkReaderRole(ctx)
	c.checkAPI(ctx)
	c.checkSnapshots(ctx)
	c.checkSchedules()
}

// failed returns the checks that failed.
func (c *checker) failed() []checkResult {
	var out []checkResult
	for _, r := range c.results {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// report prints the results, as lines or as JSON, and returns an error when
// a check failed (exit 1).
func (c *checker) report(w io.Writer, asJSON bool) error {
	failed := c.failed()
	if asJSON {
		out := struct {
			Checks  []checkResult `json:"checks"`
			OK      bool          `json:"ok"`
			Notices []string      `json:"notices,omitempty"`
		}{c.results, len(failed) == 0, c.notices}
		if err := writeJSON(w, out); err != nil {
			return fmt.Errorf("printing the checks: %w", err)
		}
	} else {
		for _, r := range c.results {
			fmt.Fprintln(w, r.line())
			if !r.OK {
				fmt.Fprintf(w, "     fix: %s\n", r.Fix)
			}
		}
		for _, n := range c.notices {
			fmt.Fprintf(w, "note %s\n", n)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d checks failed, the first: %s", len(failed), len(c.results), failed[0].line())
	}
	return nil
}

// logStartChecks runs the checks the worker has not done yet with the
// worker's own API client, and logs the first that fails in usersync
// check's words. It never stops the worker: a job meets the same failure
// and says so too.
func logStartChecks(ctx context.Context, e *env, store *warehouse.Store, api *jsonapi.Client) {
	c := &checker{e: e, store: store, api: api}
	c.run(ctx, false)
	failed := c.failed()
	if len(failed) == 0 {
		e.logger.InfoContext(ctx, "start checks passed (as usersync check)", "checks", len(c.results))
		return
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return // stopping: a check cut short says nothing
	}
	f := failed[0]
	for _, r := range failed { // the cause, not a check left undone for it
		if r.after == "" {
			f = r
			break
		}
	}
	e.logger.ErrorContext(ctx, "a start check failed (as usersync check)", "check", f.Name, "detail", f.Detail, "fix", f.Fix,
		"failed", len(failed))
}
