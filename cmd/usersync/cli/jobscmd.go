package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/warehouse"
)

func jobsListCommand() command {
	return command{
		name:    "jobs list",
		summary: "list the job queue's jobs, newest first: id, kind, queue (a sync's lane), state, attempt, when scheduled and attempted, last error",
		details: `Lists the jobs of this deployment's queue (<USERSYNC_SCHEMA>_river), newest
first, all but completed ones unless --all or --state says otherwise. A job
River gave up on (cancelled, discarded) runs again only when retried: usersync
jobs retry ID.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			all := fs.Bool("all", false, "list completed jobs too")
			state := fs.String("state", "", "only jobs in these states, comma-separated: available, scheduled, running, retryable, pending, cancelled, discarded, completed")
			limit := fs.Int("limit", 50, "most jobs listed")
			asJSON := fs.Bool("json", false, "print as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("usersync jobs list takes no argument, not %q", args[0])}
				}
				states, err := jobStates(*state, *all)
				if err != nil {
					return usageError{err}
				}
				if *limit < 1 || *limit > 10000 {
					return usageError{fmt.Errorf("--limit must be between 1 and 10000, not %d", *limit)}
				}
				params := river.NewJobListParams().States(states...).OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(*limit)
				if e.account != "" { // --account: that account's jobs only
					params = params.Where("coalesce(args->>'account', '') = @account", river.NamedArgs{"account": e.jobAccount()})
				}
				return withJobQueue(ctx, e, func(rc *river.Client[pgx.Tx]) error {
					res, err := rc.JobList(ctx, params)
					if err != nil {
						return fmt.Errorf("listing jobs: %w", err)
					}
					if *asJSON {
						return writeJSON(e.stdout, struct {
							Jobs []jobLine `json:"jobs"`
						}{jobLines(res.Jobs)})
					}
					printJobList(e.stdout, jobLines(res.Jobs))
					return nil
				})
			}
		},
	}
}

func jobsCancelCommand() command {
	return jobActionCommand("cancel", "cancel a queued, scheduled or retryable job (a running one is asked to stop)",
		func(ctx context.Context, rc *river.Client[pgx.Tx], id int64) (*rivertype.JobRow, error) {
			return rc.JobCancel(ctx, id)
		})
}

func jobsRetryCommand() command {
	return jobActionCommand("retry", "make a cancelled, discarded, retryable or scheduled job available to run now",
		func(ctx context.Context, rc *river.Client[pgx.Tx], id int64) (*rivertype.JobRow, error) {
			return rc.JobRetry(ctx, id)
		})
}

// jobActionCommand is usersync jobs cancel or retry: act on job ID and say
// the state it is in after.
func jobActionCommand(verb, summary string, act func(context.Context, *river.Client[pgx.Tx], int64) (*rivertype.JobRow, error)) command {
	return command{
		name:    "jobs " + verb,
		summary: summary,
		args:    "ID",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageError{fmt.Errorf("give one job id (usersync jobs list shows them): usersync jobs %s ID", verb)}
				}
				id, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil || id <= 0 {
					return usageError{fmt.Errorf("a job id is a positive whole number, not %q", args[0])}
				}
				return withJobQueue(ctx, e, func(rc *river.Client[pgx.Tx]) error {
					row, err := act(ctx, rc, id)
					if errors.Is(err, rivertype.ErrNotFound) {
						return fmt.Errorf("no job %d in %s (usersync jobs list shows them)", id, e.riverSchema())
					}
					if err != nil {
						return fmt.Errorf("%s job %d: %w", map[string]string{"cancel": "cancelling", "retry": "retrying"}[verb], id, err)
					}
					fmt.Fprintf(e.stdout, "job %d %s: %s\n", row.ID, row.Kind, jobActionOutcome(verb, row))
					return nil
				})
			}
		},
	}
}

// jobActionOutcome says what cancel or retry did, from the job's state
// after it.
func jobActionOutcome(verb string, row *rivertype.JobRow) string {
	switch {
	case verb == "cancel" && row.State == rivertype.JobStateCancelled:
		return "cancelled"
	case verb == "cancel" && row.State == rivertype.JobStateRunning:
		return "running: the worker running it was asked to cancel it (its run keeps its checkpoint)"
	case verb == "cancel":
		return fmt.Sprintf("%s: a finished job is not cancelled", row.State)
	case row.State == rivertype.JobStateAvailable:
		return "available: a worker picks it up now"
	case row.State == rivertype.JobStateRunning:
		return "running: a running job is not retried"
	}
	return string(row.State)
}

// withJobQueue opens the database, checks both schemas are migrated and
// calls f with a River client that runs no jobs.
func withJobQueue(ctx context.Context, e *env, f func(*river.Client[pgx.Tx]) error) error {
	pool, store, err := openStore(ctx, e, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	riverSchema := e.riverSchema()
	if nr := migrationsCurrent(ctx, store, riverSchema); nr != nil {
		return nr.err
	}
	rc, err := jobs.NewInsertClient(pool, riverSchema, quietLogger(e))
	if err != nil {
		return err
	}
	return f(rc)
}

// jobStates parses --state, or gives every state but completed (and that
// one too with all).
func jobStates(list string, all bool) ([]rivertype.JobState, error) {
	if list == "" {
		out := []rivertype.JobState{}
		for _, s := range rivertype.JobStates() {
			if all || s != rivertype.JobStateCompleted {
				out = append(out, s)
			}
		}
		return out, nil
	}
	known := map[string]bool{}
	for _, s := range rivertype.JobStates() {
		known[string(s)] = true
	}
	var out []rivertype.JobState
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !known[s] {
			return nil, fmt.Errorf("--state: %q is not a job state (available, scheduled, running, retryable, pending, cancelled, discarded, completed)", s)
		}
		out = append(out, rivertype.JobState(s))
	}
	return out, nil
}

// jobLine is a job as usersync jobs list shows it.
type jobLine struct {
	ID          int64           `json:"id"`
	Account     string          `json:"account"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"` // its lane, for a sync: default, or usersync_slow
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	ScheduledAt time.Time       `json:"scheduled_at"`
	AttemptedAt *time.Time      `json:"attempted_at"`
	FinalizedAt *time.Time      `json:"finalized_at"`
	Args        json.RawMessage `json:"args"`
	LastError   string          `json:"last_error"` // of its last failed attempt, on one line
}

func jobLines(rows []*rivertype.JobRow) []jobLine {
	out := make([]jobLine, 0, len(rows))
	for _, r := range rows {
		l := jobLine{ID: r.ID, Account: jobAccountOf(r.Kind, r.EncodedArgs), Kind: r.Kind, Queue: r.Queue, State: string(r.State), Attempt: r.Attempt, MaxAttempts: r.MaxAttempts,
			ScheduledAt: r.ScheduledAt.UTC(), AttemptedAt: r.AttemptedAt, FinalizedAt: r.FinalizedAt, Args: r.EncodedArgs}
		if len(l.Args) == 0 {
			l.Args = json.RawMessage("{}")
		}
		if n := len(r.Errors); n > 0 {
			l.LastError = oneLine(warehouse.CleanText(r.Errors[n-1].Error))
		}
		out = append(out, l)
	}
	return out
}

func printJobList(w io.Writer, lines []jobLine) {
	if len(lines) == 0 {
		fmt.Fprintln(w, "no jobs")
		return
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(w, "%8s  %-16s  %-18s  %-17s  %-9s  %-7s  %-19s  %-19s  %s\n", "ID", "ACCOUNT", "KIND", "QUEUE", "STATE", "ATTEMPT", "SCHEDULED", "ATTEMPTED", "LAST ERROR")
	for _, l := range lines {
		last := l.LastError
		if len(last) > 120 {
			last = last[:117] + "..."
		}
		fmt.Fprintf(w, "%8d  %-16s  %-18s  %-17s  %-9s  %3d/%-3d  %-19s  %-19s  %s\n", l.ID, l.Account, l.Kind, l.Queue, l.State, l.Attempt, l.MaxAttempts,
			at(&l.ScheduledAt), at(l.AttemptedAt), last)
	}
}

// jobAccountOf is the account a job is of: the one its arguments name, the
// default account's when they name none, "-" for the fleet's own jobs.
func jobAccountOf(kind string, args []byte) string {
	if kind == jobs.KindDue || kind == jobs.KindViews {
		return "-"
	}
	var a struct {
		Account *string `json:"account"`
	}
	if json.Unmarshal(args, &a) != nil || a.Account == nil || *a.Account == "" {
		return jobs.DefaultAccount
	}
	return *a.Account
}
