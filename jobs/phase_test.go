package jobs

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestAccountsComeDueSpread: 20 accounts on one @every schedule, whose last
// syncs were all created in the same second, come due spread over the
// period at the fleet's ticks, not all at its first tick after the period;
// each account comes due once, and the same account gets the same phase
// again (another worker, a restart).
func TestAccountsComeDueSpread(t *testing.T) {
	t.Parallel()
	const period = 20 * time.Second
	s, err := ParseSchedule("sync", fmt.Sprintf("@every %s", period), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w := &DueWorker{}
	t0 := time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC)
	dueAt := map[string]time.Duration{}
	perTick := map[time.Duration]int{}
	for i := range 20 {
		name := fmt.Sprintf("acct-%02d", i)
		a := Registered{Name: name, Schedules: Schedules{Sync: s}}
		jobs := map[[2]string]lastJob{{name, KindSync}: {created: t0, took: -1}}
		for tick := time.Second; tick <= 2*period; tick += time.Second { // a fleet tick of 1 s
			if len(w.dueOf(a, jobs, nil, t0.Add(tick))) > 0 {
				dueAt[name] = tick
				perTick[tick]++
				break
			}
		}
	}
	if len(dueAt) != 20 {
		t.Fatalf("%d of 20 accounts came due within two periods: %v", len(dueAt), dueAt)
	}
	ticks := make([]time.Duration, 0, len(dueAt))
	for _, d := range dueAt {
		if d > period {
			t.Errorf("an account came due %s after its last sync, more than its period", d)
		}
		ticks = append(ticks, d)
	}
	slices.Sort(ticks)
	t.Logf("due after %v", ticks)
	if spread := ticks[len(ticks)-1] - ticks[0]; spread < period/2 {
		t.Errorf("the 20 accounts came due within %s of each other; want them spread over the %s period", spread, period)
	}
	for tick, n := range perTick {
		if n > 4 {
			t.Errorf("%d accounts came due at the same tick (%s)", n, tick)
		}
	}
	for _, name := range []string{"acct-00", "acct-07", "emea-prod"} {
		a, b := phaseFor(s, name), phaseFor(s, name)
		if a.Next(t0) != b.Next(t0) {
			t.Errorf("%s got two phases: next ticks %s and %s", name, a.Next(t0), b.Next(t0))
		}
	}
}

// TestCronPhaseIsBounded: a cron schedule keeps its wall times, shifted by
// at most cronPhaseMax (and a tenth of its gap), and its ticks stay a gap
// apart.
func TestCronPhaseIsBounded(t *testing.T) {
	t.Parallel()
	hourly, err := ParseSchedule("sync", "0 * * * *", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC)
	tick := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	phases := map[time.Duration]bool{}
	for i := range 20 {
		p := phaseFor(hourly, fmt.Sprintf("acct-%02d", i))
		next := p.Next(t0)
		if next.Before(tick) || !next.Before(tick.Add(cronPhaseMax)) {
			t.Errorf("acct-%02d's hourly tick is at %s, want within a minute after %s", i, next, tick)
		}
		if after := p.Next(next); after.Sub(next) != time.Hour {
			t.Errorf("acct-%02d's ticks are %s apart, want an hour", i, after.Sub(next))
		}
		phases[next.Sub(tick)] = true
	}
	if len(phases) < 10 {
		t.Errorf("20 accounts got %d distinct phases on an hourly schedule", len(phases))
	}
}
