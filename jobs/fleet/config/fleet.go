package config

import (
	"fmt"
	"time"
)

// fleetSettings are the worker's settings of the fleet: the slots of its
// queues, its tick for the registered accounts, the bound on a job's wait
// for the API's rate limit and how many accounts it keeps open. All are
// fleet-wide: one worker serves every account.
func fleetSettings() []Setting {
	return []Setting{
		{Env: "USERSYNC_LONG_WORKERS", Scope: FleetWide, Flag: "long-workers", Default: "1", Meaning: "backfills and reconciles a worker process runs at once, of any account, in slots of their own (the queue usersync_long): a long backfill never takes a slot of the incremental syncs (USERSYNC_WORKERS).",
			set: func(c *Config, v string) error { return parseInt(&c.LongWorkers, v, 1, 16) }},
		{Env: "USERSYNC_SNAPSHOT_WORKERS", Scope: FleetWide, Flag: "snapshot-workers", Default: "1", Meaning: "snapshots a worker process writes at once, of any account, in slots of their own (the queue usersync_snapshot).",
			set: func(c *Config, v string) error { return parseInt(&c.SnapshotWorkers, v, 1, 16) }},
		{Env: "USERSYNC_SLOT_TIME", Scope: FleetWide, Flag: "slot-time", Default: "30s", Meaning: "longest an incremental sync runs in a slot of USERSYNC_WORKERS: past it the run stops, abandoning its request in flight and keeping the pages it committed, and continues in the slow lane (the queue usersync_slow, USERSYNC_SLOW_WORKERS), where the account's syncs stay while a run takes longer than this; so a slow API holds back no other account. 0 turns it off (one second at least otherwise).",
			set: func(c *Config, v string) error { return parseSlotTime(&c.SlotTime, v) }},
		{Env: "USERSYNC_SLOW_WORKERS", Scope: FleetWide, Flag: "slow-workers", Default: "2", Meaning: "incremental syncs of the slow lane a worker process runs at once, of any account, in slots of their own (the queue usersync_slow): the syncs of accounts whose runs outlast USERSYNC_SLOT_TIME, bounded by USERSYNC_TIME_SLICE alone.",
			set: func(c *Config, v string) error { return parseInt(&c.SlowWorkers, v, 1, 16) }},
		{Env: "USERSYNC_FLEET_TICK", Scope: FleetWide, Flag: "fleet-tick", Default: "10s", Meaning: "how often the worker reads the accounts (the environment's and the registered ones) and inserts the jobs their schedules make due (the job usersync_due): a scheduled job starts up to this late, and a paused or removed account gets no job from the next tick on. Every three ticks (at least 10 s) the job usersync_views remakes the union views if the accounts changed.",
			set: func(c *Config, v string) error { return parseDuration(&c.FleetTick, v, time.Second, time.Hour) }},
		{Env: "USERSYNC_RATE_LIMIT_WAIT", Scope: FleetWide, Flag: "rate-limit-wait", Default: "10s", Meaning: "longest a worker's job waits in its slot for the API's rate limit (a 429's Retry-After, or pacing when USERSYNC_API_BUDGET's share is spent) before it stops, keeping its checkpoint, and snoozes until the wait is over, freeing the slot for other accounts' jobs. Commands run by hand (usersync sync) wait up to a minute.",
			set: func(c *Config, v string) error { return parseDuration(&c.RateLimitWait, v, time.Second, time.Hour) }},
		{Env: "USERSYNC_ACCOUNT_CACHE", Scope: FleetWide, Flag: "account-cache", Default: "64", Meaning: "registered accounts whose API client, syncer and snapshot writer a worker keeps open between jobs; the least recently used beyond it are closed and opened again for their next job, so a worker's memory stays flat however many accounts there are.",
			set: func(c *Config, v string) error { return parseInt(&c.AccountCache, v, 1, 100000) }},
	}
}

// parseSlotTime parses USERSYNC_SLOT_TIME: 0 (off), or a duration from a
// second to a day.
func parseSlotTime(dst *time.Duration, v string) error {
	if err := parseDuration(dst, v, 0, 24*time.Hour); err != nil || *dst == 0 || *dst >= time.Second {
		return err
	}
	return fmt.Errorf("must be 0 (off) or a duration between 1s and 24h0m0s (like 30s), not %q", v)
}
