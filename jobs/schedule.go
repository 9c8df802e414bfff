package jobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed cron schedule, or nil when the schedule is off.
type Schedule = cron.Schedule

// ParseSchedule parses a schedule setting: a robfig/cron expression of five
// fields (minute hour day-of-month month day-of-week), a descriptor such as
// @hourly, @daily or "@every 15m", optionally prefixed by CRON_TZ=Zone; or
// "off" to disable it. Without a zone the expression is read in UTC, so a
// schedule does not depend on the server's local time. An @every interval
// must be at least minEvery (and above zero: robfig/cron would run a zero or
// negative one every second). name is the setting, for the error.
func ParseSchedule(name, spec string, minEvery time.Duration) (s Schedule, err error) {
	spec = strings.TrimSpace(spec)
	switch strings.ToLower(spec) {
	case "off", "never", "disabled", "false":
		return nil, nil
	case "":
		return nil, fmt.Errorf("%s is empty; give a cron expression, a descriptor like @every 15m, or off", name)
	}
	invalid := func(why string) error {
		return fmt.Errorf("%s is not a valid schedule (%s); examples: */15 * * * *, @hourly, @every 15m, CRON_TZ=Europe/Paris 0 3 * * *, off", name, why)
	}
	expr := spec
	if zone, rest, ok := cutZone(spec); ok {
		if zone == "" || strings.TrimSpace(rest) == "" {
			return nil, invalid("CRON_TZ= takes a zone, a space and an expression")
		}
		expr = strings.TrimSpace(rest)
	} else {
		spec = "CRON_TZ=UTC " + spec
	}
	if every, ok := strings.CutPrefix(expr, "@every"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(every))
		switch {
		case err != nil:
			return nil, invalid(err.Error())
		case d <= 0:
			return nil, invalid("@every takes a positive interval")
		case d < minEvery:
			return nil, fmt.Errorf("%s @every %s is shorter than %s, the shortest interval allowed (USERSYNC_SCHEDULE_MIN_INTERVAL); schedule it less often", name, d, minEvery)
		}
	}
	// robfig/cron's parser panics on some malformed specs (v3.0.1: a zone
	// prefix without an expression); whatever else it may panic on is a bad
	// setting, not a crash.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, invalid(fmt.Sprint(r))
		}
	}()
	s, err = cron.ParseStandard(spec)
	if err != nil {
		return nil, invalid(err.Error())
	}
	return s, nil
}

// cutZone splits "CRON_TZ=Zone rest" (or TZ=) into the zone and the rest.
func cutZone(spec string) (zone, rest string, ok bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if after, found := strings.CutPrefix(spec, p); found {
			zone, rest, _ = strings.Cut(after, " ")
			return zone, rest, true
		}
	}
	return "", "", false
}
