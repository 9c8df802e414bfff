package jobs

import (
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// Snooze delays used by outcome.
const (
	lockedSnooze  = 10 * time.Second // another run still holds the sync lock after lockWait
	drainedSnooze = time.Second      // the process stopped mid-run; another takes over
)

// outcome maps a run's error to what River should do with the job:
//   - nil: completed;
//   - the sync lock is held elsewhere, a long rate limit, or a drained run:
//     snooze (no attempt used) and run again later;
//   - a refused credential or a query the API rejects: cancel with the
//     reason, since retrying cannot help;
//   - anything else: the error, so River retries with backoff up to
//     MaxAttempts.
func outcome(err error) error {
	if err == nil {
		return nil
	}
	var rl *jsonapi.RateLimitError
	var auth *jsonapi.AuthError
	var resp *jsonapi.ResponseError
	var q *jsonapi.QueryError
	switch {
	case errors.Is(err, warehouse.ErrLocked):
		return river.JobSnooze(lockedSnooze)
	case errors.Is(err, syncer.ErrDrained):
		return river.JobSnooze(drainedSnooze)
	case errors.As(err, &rl):
		return river.JobSnooze(min(max(rl.RetryAfter, time.Second), jsonapi.MaxWait))
	case errors.As(err, &auth), errors.As(err, &q):
		return river.JobCancel(err)
	case errors.As(err, &resp) && (resp.StatusCode == 401 || resp.StatusCode == 403 || resp.StatusCode == 400):
		return river.JobCancel(err)
	}
	return err
}
