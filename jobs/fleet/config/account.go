package config

import (
	"cmp"
	"fmt"
	"time"

	"github.com/usersync/usersync/jobs"
)

// ForAccount is the effective Config of account name: the fleet's, with
// the account's values applied by the settings' own parsers, except that its
// schema and credentials are never the fleet's (one not stored is the
// setting's default). sources names where a value came from (a flag of
// accounts add); the others are named "account NAME: VARIABLE". Errors are
// one line naming the setting and never hold a secret.
func ForAccount(fleet Config, name string, vals, sources map[string]string) (Config, error) {
	c := fleet
	c.SchemaForce = false // an account's schema is always its own
	srcs := map[string]string{}
	for _, s := range Settings() {
		srcs[s.Env] = s.Env
	}
	for _, s := range AccountSettings() {
		v, ok := vals[s.Env]
		if !ok && !NeverInherited(s) {
			continue
		}
		if !ok {
			v = s.Default
		}
		src := sources[s.Env]
		if src == "" {
			src = "account " + name + ": " + s.Env
		}
		srcs[s.Env] = src
		if err := s.apply(&c, v, src); err != nil {
			return Config{}, err
		}
	}
	if err := checkAccountSchemaName(c); err != nil {
		return Config{}, fmt.Errorf("%s %w", srcs["USERSYNC_SCHEMA"], err)
	}
	return withPolicy(c, srcs)
}

// Schedules parses c's three schedules.
func (c Config) Schedules() (jobs.Schedules, error) { return parseSchedules(c, nil) }

// parseSchedules parses the three schedules; sources names where each came
// from (a variable or a flag), for the error.
func parseSchedules(cfg Config, sources map[string]string) (jobs.Schedules, error) {
	var s jobs.Schedules
	for _, sch := range []struct {
		env  string
		spec string
		dst  *jobs.Schedule
	}{
		{"USERSYNC_SYNC_SCHEDULE", cfg.SyncSchedule, &s.Sync},
		{"USERSYNC_RECONCILE_SCHEDULE", cfg.ReconcileSchedule, &s.Reconcile},
		{"USERSYNC_SNAPSHOT_SCHEDULE", cfg.SnapshotSchedule, &s.Snapshot},
	} {
		name := cmp.Or(sources[sch.env], sch.env)
		var err error
		if *sch.dst, err = jobs.ParseSchedule(name, sch.spec, cfg.ScheduleMinInterval); err != nil {
			return s, err
		}
	}
	return s, nil
}

// SnapshotInterval is the longest wait between snapshots the schedules s
// (c's) promise: the snapshot schedule's, or when it is off and snapshots
// follow syncs, the sync schedule's; 0 when none does.
func (c Config) SnapshotInterval(s jobs.Schedules) time.Duration {
	now := time.Now()
	if s.Snapshot != nil {
		return jobs.ScheduleInterval(s.Snapshot, now)
	}
	if c.SnapshotAfterSync {
		return jobs.ScheduleInterval(s.Sync, now)
	}
	return 0
}
