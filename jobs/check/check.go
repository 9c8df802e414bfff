// Package check runs usersync check's checks (database, migrations,
// writes, reader role, API, token, budget, snapshots, schedules), which the
// worker runs at start too, and reports them.
package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// Timeout bounds the whole of the checks: an API that does not answer is
// retried for a while, and one line saying so beats a command that hangs.
const Timeout = 90 * time.Second

// Options are what the checks check, from the settings.
type Options struct {
	Store       *warehouse.Store
	RiverSchema string
	// Ping checks the database answers; DatabaseShown is where it is,
	// without a password.
	Ping          func(context.Context) error
	DatabaseShown string
	ReaderRole    string // USERSYNC_READER_ROLE
	// APISettings is why the API's settings are incomplete, nil when they
	// are not.
	APISettings error
	APIURL      string
	OAuth       bool
	// API is the client the API checks use; nil builds one with NewAPI
	// (the worker gives its own, so that its token is refreshed once).
	API    *jsonapi.Client
	NewAPI func(context.Context) (*jsonapi.Client, error)
	// Grants reads the stored OAuth grant (nil: none to read).
	Grants interface {
		Info(context.Context) (tokens.Info, error)
	}
	AuthRemedy   string // what to do when the credentials are refused
	LoginCommand string // the auth login command of the account
	APIBudget    float64
	SnapshotDir  string // USERSYNC_SNAPSHOT_DIR
	S3           snapshot.S3Options
	// Schedules are the sync, reconcile and snapshot schedules, or
	// SchedulesErr why they do not parse.
	Schedules    []Schedule
	SchedulesErr error
}

// Schedule is one of the schedules: what it runs, its setting's value and
// when it runs (nil: off).
type Schedule struct {
	What, Spec string
	Next       interface{ Next(time.Time) time.Time }
}

// Result is one check: its name, whether it passed, what was found and,
// when it failed, what to do.
type Result struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
	// after is the check this one needed, which failed (it was not run).
	after string
}

// Line is the check's line: "ok database: answers..." or "FAIL token: ...".
func (r Result) Line() string {
	status := "ok"
	if !r.OK {
		status = "FAIL"
	}
	return fmt.Sprintf("%-4s %s: %s", status, r.Name, r.Detail)
}

// checker runs the checks of usersync check and of the worker's start, in
// order, each check knowing what the earlier ones found.
type checker struct {
	o        Options
	dbOK     bool // the database answers
	migrated bool // and both schemas are current
	results  []Result
}

func (c *checker) pass(name, detail string) {
	c.results = append(c.results, Result{Name: name, OK: true, Detail: detail})
}

func (c *checker) fail(name, detail, fix string) {
	c.results = append(c.results, Result{Name: name, Detail: detail, Fix: fix})
}

// notChecked fails name for the check it needs, which failed.
func (c *checker) notChecked(name, needs string) {
	c.results = append(c.results, Result{Name: name, Detail: "not checked: the " + needs + " check failed",
		Fix: "fix the " + needs + " check first", after: needs})
}

// Run runs every check; withDatabase false takes the database as reached
// and migrated (the worker waited for both before it checks).
func Run(ctx context.Context, o Options, withDatabase bool) Report {
	c := &checker{o: o}
	c.run(ctx, withDatabase)
	return Report{Results: c.results, DatabaseOK: c.dbOK}
}

func (c *checker) run(ctx context.Context, withDatabase bool) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
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

// Report is the checks' results, in order.
type Report struct {
	Results []Result
	// DatabaseOK says the database answered.
	DatabaseOK bool
	// Notices say what the registry's rows stored by an earlier release
	// ask of the operator; they fail no check.
	Notices []string
}

// Failed returns the checks that failed.
func (r Report) Failed() []Result {
	var out []Result
	for _, x := range r.Results {
		if !x.OK {
			out = append(out, x)
		}
	}
	return out
}

// JSON is the report as usersync check --json prints it.
func (r Report) JSON() any {
	return struct {
		Checks  []Result `json:"checks"`
		OK      bool     `json:"ok"`
		Notices []string `json:"notices,omitempty"`
	}{r.Results, len(r.Failed()) == 0, r.Notices}
}

// WriteText prints the report as usersync check does: a line a check, a
// fix under each failure, then the notices.
func (r Report) WriteText(w io.Writer) {
	for _, x := range r.Results {
		fmt.Fprintln(w, x.Line())
		if !x.OK {
			fmt.Fprintf(w, "     fix: %s\n", x.Fix)
		}
	}
	for _, n := range r.Notices {
		fmt.Fprintf(w, "note %s\n", n)
	}
}

// Err is nil when every check passed, else the first failure.
func (r Report) Err() error {
	if failed := r.Failed(); len(failed) > 0 {
		return fmt.Errorf("%d of %d checks failed, the first: %s", len(failed), len(r.Results), failed[0].Line())
	}
	return nil
}

// Log logs the first failure as the worker's start does, in usersync
// check's words: the cause, not a check left undone for it.
func (r Report) Log(ctx context.Context, logger *slog.Logger) {
	failed := r.Failed()
	if len(failed) == 0 {
		logger.InfoContext(ctx, "start checks passed (as usersync check)", "checks", len(r.Results))
		return
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return // stopping: a check cut short says nothing
	}
	f := failed[0]
	for _, x := range failed {
		if x.after == "" {
			f = x
			break
		}
	}
	logger.ErrorContext(ctx, "a start check failed (as usersync check)", "check", f.Name, "detail", f.Detail, "fix", f.Fix,
		"failed", len(failed))
}

// oneLine keeps a message on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
