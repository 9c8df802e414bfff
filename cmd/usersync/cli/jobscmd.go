package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/check"
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
				states, err := jobs.ParseJobStates(*state, *all)
				if err != nil {
					return usageError{err}
				}
				if *limit < 1 || *limit > 10000 {
					return usageError{fmt.Errorf("--limit must be between 1 and 10000, not %d", *limit)}
				}
				o := jobs.ListOptions{States: states, Limit: *limit, ByAccount: e.account != ""}
				if o.ByAccount { // --account: that account's jobs only
					o.Account = e.jobAccount()
				}
				return withJobQueue(ctx, e, func(rc *river.Client[pgx.Tx]) error {
					lines, err := jobs.ListJobs(ctx, rc, o)
					if err != nil {
						return err
					}
					if *asJSON {
						return writeJSON(e.stdout, struct {
							Jobs []jobs.JobLine `json:"jobs"`
						}{lines})
					}
					jobs.WriteJobLines(e.stdout, lines)
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
					fmt.Fprintf(e.stdout, "job %d %s: %s\n", row.ID, row.Kind, jobs.JobActionOutcome(verb, row))
					return nil
				})
			}
		},
	}
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
	if p := check.MigrationsCurrent(ctx, store, riverSchema); p != nil {
		return p.Err
	}
	rc, err := jobs.NewInsertClient(pool, riverSchema, quietLogger(e))
	if err != nil {
		return err
	}
	return f(rc)
}
