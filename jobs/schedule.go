package jobs

import (
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed cron schedule, or nil when the schedule is off.
type Schedule = cron.Schedule

// ParseSchedule parses a schedule setting: a robfig/cron expression of five
// fields (minute hour day-of-month month day-of-week), a descriptor such as
// @hourly, @daily or "@every 15m", optionally prefixed by CRON_TZ=Zone; or
// "off" to disable it. Without a zone the expression is read in UTC, so a
// schedule does not depend on the server's local time. name is the setting,
// for the error.
func ParseSchedule(name, spec string) (Schedule, error) {
	spec = strings.TrimSpace(spec)
	switch strings.ToLower(spec) {
	case "off", "never", "disabled", "false":
		return nil, nil
	case "":
		return nil, fmt.Errorf("%s is empty; give a cron expression, a descriptor like @every 15m, or off", name)
	}
	if !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "@every") {
		spec = "CRON_TZ=UTC " + spec
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid schedule (%w); examples: */15 * * * *, @hourly, @every 15m, CRON_TZ=Europe/Paris 0 3 * * *, off", name, err)
	}
	return s, nil
}
