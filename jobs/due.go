package jobs

import "time"

// jobRetention is how long finished jobs are kept (River's default is a day
// for completed ones): the fleet's tick reads the last run of a weekly
// schedule from them.
const jobRetention = 8 * 24 * time.Hour

// isDueNow says whether a job of schedule s is due, a decision made at
// every tick of the fleet (fleet.go) by the database's clock alone: no
// slack, since no tick fired early by another clock is to be served, and
// the fleet's tick comes round again soon. A job created at or after a tick
// of s served it; the next is due once its time has come.
func isDueNow(s Schedule, last *time.Time, now time.Time) bool {
	return last == nil || !s.Next(*last).After(now)
}
