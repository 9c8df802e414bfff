package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
type due struct {
	pool        *pgxpool.Pool
	riverSchema string
	kind        string
	schedule    Schedule
	logger      *slog.Logger
}

func (d *due) now(now time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last *time.Time
	err := d.pool.QueryRow(ctx, `SELECT max(created_at) FROM `+pgx.Identifier{d.riverSchema, "river_job"}.Sanitize()+
		` WHERE kind = $1`, d.kind).Scan(&last)
	if err != nil {
		d.logger.WarnContext(ctx, "could not read when a periodic job last ran; inserting it", "kind", d.kind, "error", err.Error())
		return true
	}
	if isDue(d.schedule, last, now) {
		return true
	}
	d.logger.InfoContext(ctx, "periodic job not due: it ran since its last scheduled time", "kind", d.kind,
		"last", last.UTC().Format(time.RFC3339), "next", d.schedule.Next(*last).UTC().Format(time.RFC3339))
	return false
}

// isDue says whether a tick of s lies between last (the last job's creation,
// nil when none) and now. A tick may fire a little early, and the clocks of
// the database and the worker differ: half a period (at most a minute)
// counts as now.
func isDue(s Schedule, last *time.Time, now time.Time) bool {
	if last == nil {
		return true
	}
	next := s.Next(now)
	slack := min(s.Next(next).Sub(next)/2, time.Minute)
	return !s.Next(*last).After(now.Add(slack))
}
