package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func backfillCommand() command {
	return command{
		name:    "backfill",
		summary: "queue a backfill for the worker (every user, or an updatedAt range) and optionally wait for it",
		details: `Inserts a backfill job into the queue in one transaction and prints its id; a
running worker (on any machine using the same database) picks it up. An
identical backfill already queued or running is not queued twice: its id is
printed instead. With --wait it follows the job, showing progress on a terminal,
and exits with the job's outcome: 0 when it completed, 1 when it was cancelled
or exhausted its attempts (the error is printed), or 1 when the job is still
queued after 15 s and no worker runs (the job stays queued for one).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			full := fs.Bool("full", false, "backfill every user (the default when no range is given)")
			since := fs.String("since", "", "backfill users updated at or after this time (RFC 3339 or YYYY-MM-DD)")
			until := fs.String("until", "", "backfill users updated at or before this time")
			wait := fs.Bool("wait", false, "wait for the job to finish and exit with its outcome")
			poll := fs.Duration("poll", time.Second, "how often --wait checks the job")
			return func(ctx context.Context, e *env, _ []string) error {
				var args jobs.BackfillArgs
				var err error
				if args.Since, err = parseTimeFlag("--since", *since); err != nil {
					return err
				}
				if args.Until, err = parseTimeFlag("--until", *until); err != nil {
					return err
				}
				if *full && (args.Since != nil || args.Until != nil) {
					return usageError{errors.New("--full backfills everything; it cannot be combined with --since or --until")}
				}
				if args.Since != nil && args.Until != nil && args.Until.Before(*args.Since) {
					return usageError{errors.New("--until is before --since")}
				}
				args.Full = args.Since == nil && args.Until == nil
				args.Account = e.jobAccount()
				return runBackfill(ctx, e, args, *wait, *poll)
			}
		},
	}
}

func runBackfill(ctx context.Context, e *env, args jobs.BackfillArgs, wait bool, poll time.Duration) error {
	pool, store, err := openStore(ctx, e, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := refusePaused(ctx, e, pool); err != nil {
		return err
	}
	rc, err := jobs.NewInsertClient(pool, e.riverSchema(), quietLogger(e))
	if err != nil {
		return err
	}
	var res *rivertype.JobInsertResult
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		res, err = rc.InsertTx(ctx, tx, args, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("queueing the backfill: %w", err)
	}
	what := "every user"
	if !args.Full {
		what = "users updated " + timeOrInf(args.Since) + " .. " + timeOrInf(args.Until)
	}
	if res.UniqueSkippedAsDuplicate {
		fmt.Fprintf(e.stdout, "an identical backfill (%s) is already %s: job %d\n", what, res.Job.State, res.Job.ID)
	} else {
		fmt.Fprintf(e.stdout, "backfill of %s queued: job %d\n", what, res.Job.ID)
	}
	if !wait {
		return nil
	}
	alive, err := jobs.WorkerRunning(pool, e.riverSchema())
	if err != nil {
		return err
	}
	return waitForJob(ctx, e, store, rc, res.Job.ID, poll, alive)
}

// noWorkerAfter is how long --wait sees its job wait for a worker before it
// checks that one runs: a worker busy with another job leaves it queued.
const noWorkerAfter = 15 * time.Second

// errNoWorker is what --wait says of a job no worker will take.
func errNoWorker(id int64, e *env) error {
	return fmt.Errorf("job %d is queued, but no worker is running for schema %s (no River leader in %s): start one with usersync worker, or run the backfill inline with usersync sync --full (or --since/--until); the job stays queued for the next worker",
		id, e.cfg.Schema, e.riverSchema())
}

// jobGetter is what waiting needs of the River client.
type jobGetter interface {
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
}

// waitForJob polls the job until River finalizes it, showing the progress of
// its run, and returns its outcome. River's subscriptions only see jobs the
// same process works, so polling is the way from another machine.
func waitForJob(ctx context.Context, e *env, store *warehouse.Store, rc jobGetter, id int64, poll time.Duration,
	workerRunning func(context.Context) (bool, error)) error {
	total := countUsers(ctx, e, store)
	live := isTerminal(e.stderr)
	lastLog := time.Time{}
	started := time.Now()
	for {
		job, err := rc.JobGet(ctx, id)
		if err != nil {
			return fmt.Errorf("reading job %d: %w", id, err)
		}
		run, err := store.Runs().OfJob(ctx, id)
		if err != nil {
			return err
		}
		if job.FinalizedAt != nil {
			if live {
				fmt.Fprint(e.stderr, "\r\033[K")
			}
			return jobOutcome(e.stdout, job, run)
		}
		if job.State == rivertype.JobStateAvailable && time.Since(started) > noWorkerAfter {
			ok, err := workerRunning(ctx)
			if err != nil {
				return fmt.Errorf("checking for a worker: %w", err)
			}
			if !ok {
				return errNoWorker(id, e)
			}
		}
		line := progressLine(job, run, total, time.Since(started))
		switch {
		case live:
			fmt.Fprintf(e.stderr, "\r%s\033[K", line)
		case time.Since(lastLog) >= 10*time.Second:
			fmt.Fprintln(e.stderr, line)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting; job %d goes on in the worker: %w", id, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// countUsers asks the API for the number of users, once, for the progress
// bar's total; 0 when the API is not configured here or does not say.
func countUsers(ctx context.Context, e *env, store *warehouse.Store) int64 {
	if e.cfg.RequireAPI() != nil {
		return 0
	}
	client, err := newAPIClient(ctx, e, store)
	if err != nil {
		return 0
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	doc, err := client.Get(cctx, "users", jsonapi.Query{}.Fields("user").PageSize(1).Count(true))
	if err != nil || len(doc.Meta) == 0 {
		return 0
	}
	var meta struct {
		Count *int64 `json:"count"`
	}
	if json.Unmarshal(doc.Meta, &meta) != nil || meta.Count == nil {
		return 0
	}
	return *meta.Count
}

func progressLine(job *rivertype.JobRow, run *warehouse.Run, total int64, elapsed time.Duration) string {
	if run == nil || job.State != rivertype.JobStateRunning {
		return fmt.Sprintf("job %d %s (attempt %d), waiting %s", job.ID, job.State, job.Attempt, elapsed.Round(time.Second))
	}
	p := run.Progress
	rate := float64(p.Fetched) / max(time.Since(run.StartedAt).Seconds(), 0.001)
	if total <= 0 {
		return fmt.Sprintf("job %d running: %d pages, %d users, %.0f users/s", job.ID, p.Pages, p.Fetched, rate)
	}
	frac := min(float64(p.Fetched)/float64(total), 1)
	const width = 30
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	eta := ""
	if rate > 0 && p.Fetched < total {
		eta = ", about " + (time.Duration(float64(total-p.Fetched)/rate) * time.Second).Round(time.Second).String() + " left"
	}
	return fmt.Sprintf("job %d [%s] %3.0f%% %d/%d users, %.0f users/s%s", job.ID, bar, frac*100, p.Fetched, total, rate, eta)
}

func jobOutcome(w io.Writer, job *rivertype.JobRow, run *warehouse.Run) error {
	if job.State == rivertype.JobStateCompleted {
		fmt.Fprintf(w, "job %d completed after %d attempt(s)\n", job.ID, job.Attempt)
		if run != nil {
			var sum syncer.Summary
			if json.Unmarshal(run.Summary, &sum) == nil && sum.RunID != 0 {
				printSummary(w, sum)
			}
		}
		return nil
	}
	reason := "no error recorded"
	if n := len(job.Errors); n > 0 {
		reason = job.Errors[n-1].Error
	}
	return fmt.Errorf("job %d %s after %d attempt(s): %s", job.ID, job.State, job.Attempt, reason)
}
