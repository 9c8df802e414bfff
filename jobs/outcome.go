package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// Snooze delays used by outcome. A job whose account's sync lock another
// run holds snoozes at once rather than wait in a worker slot, first for
// lockedSnoozeFirst, then twice as long each time it finds the lock held
// again, up to lockedSnooze: a short run ahead of it (a small backfill, a
// sync) is followed within a second or two, a long one (a full backfill) is
// polled every few seconds. lockedSnooze stays within River's scheduler
// interval (5 s): a longer snooze leaves the job scheduled until the
// scheduler's next pass, up to 5 s more.
const (
	lockedSnoozeFirst = time.Second
	lockedSnooze      = 5 * time.Second
	drainedSnooze     = time.Second // the process stopped mid-run; another takes over
)

// ErrAwaitingLogin is the error of a run of an account that authenticates
// with OAuth while no refresh token is stored for it yet (usersync auth
// login has not run): a worker started before the login works on, and the
// account's jobs snooze (loginSnoozeAfter), without using an attempt, until
// the login stores one.
var ErrAwaitingLogin = errors.New("no OAuth refresh token is stored yet")

// A job awaiting its account's login snoozes loginSnoozeFirst, then twice as
// long each time up to loginSnooze: a login done soon after the worker's
// start is followed within seconds, a forgotten one costs a failed run
// every few minutes (each says what to run), not one a second.
const (
	loginSnoozeFirst = 5 * time.Second
	loginSnooze      = 5 * time.Minute
)

// loginSnoozeAfter is the snooze of a job that found no stored OAuth grant
// after snoozing snoozes times.
func loginSnoozeAfter(snoozes int64) time.Duration {
	if snoozes >= 6 {
		return loginSnooze
	}
	return min(loginSnoozeFirst<<snoozes, loginSnooze)
}

// LoginCommand is the command that stores the OAuth grant of account.
func LoginCommand(account string) string {
	if AccountName(account) == DefaultAccount {
		return "usersync auth login"
	}
	return "usersync auth login --account " + account
}

// lockedSnoozeAfter is the snooze of a job that found its account's lock
// held after snoozing snoozes times.
func lockedSnoozeAfter(snoozes int64) time.Duration {
	if snoozes >= 3 {
		return lockedSnooze
	}
	return min(lockedSnoozeFirst<<snoozes, lockedSnooze)
}

// snoozes is how many times River snoozed job (its metadata's count).
func snoozes(job *rivertype.JobRow) int64 {
	var m struct {
		Snoozes int64 `json:"snoozes"`
	}
	if job == nil || json.Unmarshal(job.Metadata, &m) != nil {
		return 0
	}
	return m.Snoozes
}

// outcome maps a run's error to what River should do with the job:
//   - nil: completed;
//   - a run its time slice ended (slice.go): snooze for no time, to resume
//     at once behind the jobs that came due meanwhile;
//   - the account's sync lock is held by another run (a snooze growing
//     with the job's snoozes, lockedSnoozeAfter; Deps.outcome continues
//     the job as a waiter instead), a rate limit longer than
//     the worker waits in a slot, or a run its process stopped (a
//     shutdown): snooze (no attempt used) and run again later;
//   - a refused credential or a query the API rejects: cancel with the
//     reason, since retrying cannot help;
//   - anything else (a job timeout too): the error, so River retries with
//     backoff up to MaxAttempts.
func outcome(err error, job *rivertype.JobRow) error {
	if err == nil {
		return nil
	}
	var rl *jsonapi.RateLimitError
	switch {
	case errors.Is(err, warehouse.ErrLocked):
		return river.JobSnooze(lockedSnoozeAfter(max(snoozes(job), lockWaitsOf(job))))
	case errors.Is(err, ErrSliced):
		return river.JobSnooze(0)
	case syncer.Interrupted(err):
		return river.JobSnooze(drainedSnooze)
	case errors.As(err, &rl):
		return river.JobSnooze(min(max(rl.RetryAfter, time.Second), jsonapi.MaxWait))
	case errors.Is(err, ErrAwaitingLogin):
		return river.JobSnooze(loginSnoozeAfter(snoozes(job)))
	case refused(err):
		return river.JobCancel(err)
	}
	return err
}

// refused says whether err is one retrying cannot help: credentials the API
// refused, or a query it rejects.
func refused(err error) bool {
	var auth *jsonapi.AuthError
	var resp *jsonapi.ResponseError
	var q *jsonapi.QueryError
	return errors.As(err, &auth) || errors.As(err, &q) ||
		errors.As(err, &resp) && (resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode == 400)
}

// logEnd logs a run of job that did not succeed, once, at the level its
// end deserves: a wait or an interruption is news (info), a failure River
// retries a warning, and a failure nothing retries an error; credentials the
// API refused say what to do (Deps.AuthRemedy).
func (d *Deps) logEnd(ctx context.Context, a *Account, job *rivertype.JobRow, kind string, err error) {
	attrs := []any{"job_id", job.ID, "kind", kind, "attempt", job.Attempt, "error", err.Error()}
	var auth *jsonapi.AuthError
	switch {
	case errors.Is(err, warehouse.ErrLocked):
		a.Logger.InfoContext(ctx, "another run of the account holds its sync lock; the job snoozes and runs again", attrs...)
	case errors.Is(err, ErrSliced):
		a.Logger.InfoContext(ctx, "run reached the end of its time slice; its job resumes it at once", attrs...)
	case syncer.Interrupted(err):
		a.Logger.InfoContext(ctx, "run interrupted by the shutdown; its job runs again and resumes it", attrs...)
	case syncer.Paused(err):
		a.Logger.InfoContext(ctx, "run paused by the API's rate limit; its job runs again and resumes it", attrs...)
	case errors.Is(err, ErrAwaitingLogin):
		a.Logger.InfoContext(ctx, "no OAuth refresh token is stored for the account yet: the job waits for the login and runs again",
			append(attrs, "action", LoginCommand(a.Name))...)
	case errors.As(err, &auth):
		a.Logger.ErrorContext(ctx, "the API refused usersync's credentials: no run can succeed until they are fixed; the job is cancelled",
			append(attrs, "action", d.remedy(ctx, a))...)
	case refused(err):
		a.Logger.ErrorContext(ctx, "run failed and will not be retried; the job is cancelled", attrs...)
	default:
		a.Logger.WarnContext(ctx, "run failed; the job retries it", attrs...)
	}
}

// remedy says what to do when the API refuses a's credentials.
func (d *Deps) remedy(ctx context.Context, a *Account) string {
	if d.Remedy != nil {
		return d.Remedy(ctx, a.Name)
	}
	return a.AuthRemedy
}
