package jobs

import (
	"hash/fnv"
	"time"

	"github.com/robfig/cron/v3"
)

// cronPhaseMax bounds the phase of a cron schedule (one with fixed wall
// times): such a time is the operator's choice, kept to within a minute and
// a tenth of the schedule's gap, yet a fleet on one "0 * * * *" does not
// come due in one second.
const cronPhaseMax = time.Minute

// phased is an account's schedule shifted by a phase derived from the
// account's name: the same on every replica and after every restart, so
// that the accounts on one schedule come due spread over its period rather
// than all in the same second of the fleet's tick, whichever replica leads.
type phased struct {
	s     Schedule
	every time.Duration // an @every schedule's period; 0 for a cron one
	phase time.Duration
}

// phaseFor returns s with account's phase: an @every schedule ticks at the
// multiples of its period from the Unix epoch plus a phase within the
// period; a cron schedule ticks at its own times plus a phase of at most
// cronPhaseMax and a tenth of its gap.
func phaseFor(s Schedule, account string) Schedule {
	if s == nil {
		return nil
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(account))
	sum := h.Sum64()
	within := func(bound time.Duration) time.Duration {
		if bound < time.Millisecond {
			return 0
		}
		return time.Duration(sum%uint64(bound/time.Millisecond)) * time.Millisecond
	}
	if c, ok := s.(cron.ConstantDelaySchedule); ok {
		return phased{s: s, every: c.Delay, phase: within(c.Delay)}
	}
	ref := time.Unix(0, 0).UTC()
	first := s.Next(ref)
	return phased{s: s, phase: within(min(s.Next(first).Sub(first)/10, cronPhaseMax))}
}

// Next implements cron.Schedule.
func (p phased) Next(t time.Time) time.Time {
	if p.every <= 0 {
		return p.s.Next(t.Add(-p.phase)).Add(p.phase)
	}
	origin := time.Unix(0, 0).Add(p.phase)
	d := t.Sub(origin)
	k := d / p.every
	if d < 0 && d%p.every != 0 {
		k-- // the floor, before the origin
	}
	return origin.Add((k + 1) * p.every).In(t.Location())
}
