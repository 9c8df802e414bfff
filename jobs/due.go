package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// jobRetention is how long finished jobs are kept (River's default is a day
// for completed ones): due reads the last run of a weekly schedule from them.
const jobRetention = 8 * 24 * time.Hour

// due decides whether a periodic job is inserted when River asks: at each
// tick of its schedule, and whenever a scheduler starts (a worker starting, a
// new leader elected). It is due when no job of its kind was created since
// the tick before now: at a tick, always; at a start, only when a tick was
// missed (the worker was down) or it never ran. So restarts add no work, and
// a missed reconcile or snapshot is caught up once, not once per start.
//
// The decision reads one clock, the database's: the last job's created_at
// and now() come from the same query, so a worker whose clock differs from
// the database's decides as one that agrees (within the slack of isDue).
// When that query fails nothing is inserted (fail closed): the next tick or
// start decides again (docs/guarantees.md says why no job is lost for good).
type due struct {
	river    *riverDB
	kind     string
	schedule Schedule
	logger   *slog.Logger
}

// now says whether the job is due. workerNow, the worker's clock when River
// asked, serves only to warn that the two clocks differ.
func (d *due) now(workerNow time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	last, dbNow, err := d.river.lastCreated(ctx, d.kind, DefaultAccount)
	if err != nil {
		d.logger.ErrorContext(ctx, "could not read when a periodic job last ran; not inserting it now: the next tick or worker start decides again",
			"kind", d.kind, "error", err.Error())
		return false
	}
	// An @every schedule's decision does not depend on the clocks; a cron
	// schedule's tick that the worker fires early by more than the slack is
	// not due by the database's clock.
	_, every := d.schedule.(cron.ConstantDelaySchedule)
	if off := workerNow.Sub(dbNow); !every && off.Abs() > slackOf(d.schedule, dbNow)/2 {
		d.logger.WarnContext(ctx, "the worker's clock differs from the database's; periodic jobs follow the database's: synchronize the clocks (NTP)",
			"kind", d.kind, "worker_ahead_by", off.String())
	}
	if isDue(d.schedule, last, dbNow) {
		return true
	}
	d.logger.InfoContext(ctx, "periodic job not due: it ran since its last scheduled time", "kind", d.kind,
		"last", last.UTC().Format(time.RFC3339), "next", nextUnserved(d.schedule, *last, dbNow).UTC().Format(time.RFC3339))
	return false
}

// isDue says whether a tick of s that no job served lies between last (the
// last job's creation, nil when none) and now, both by the database's clock.
// River fires a tick by the worker's clock, so by the database's it may come
// a little early or late: half a period, at most a minute (the slack), counts
// as now, and for a cron schedule a job created up to the slack before a
// tick served that tick (the database a little behind the worker when it was
// inserted; or a start just before the tick, which then adds no second job).
// An @every schedule has no fixed ticks: its next is a period after the last
// job, so only now needs the slack.
func isDue(s Schedule, last *time.Time, now time.Time) bool {
	if last == nil {
		return true
	}
	return !nextUnserved(s, *last, now).After(now.Add(slackOf(s, now)))
}

// isDueNow is isDue for a decision that is not made at a tick of s but
// at every tick of the fleet (fleet.go), by the database's clock alone: no
// slack, since no tick fired early by another clock is to be served, and
// the fleet's tick comes round again soon. A job created at or after a tick
// of s served it; the next is due once its time has come.
func isDueNow(s Schedule, last *time.Time, now time.Time) bool {
	return last == nil || !s.Next(*last).After(now)
}

// nextUnserved is the first tick of s after the one the job created at last
// served (see isDue); now sets the slack.
func nextUnserved(s Schedule, last, now time.Time) time.Time {
	if _, every := s.(cron.ConstantDelaySchedule); every {
		return s.Next(last)
	}
	return s.Next(last.Add(slackOf(s, now)))
}

// slackOf is how far a tick of s near now may be off by the database's
// clock: half the period that follows now's next tick, at most a minute.
func slackOf(s Schedule, now time.Time) time.Duration {
	next := s.Next(now)
	return min(s.Next(next).Sub(next)/2, time.Minute)
}
