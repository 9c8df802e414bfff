package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/syncer"
)

// backfilled is a backfill's summary, its users pages' own rate, its wall
// time, peak RSS (MiB) and the CPU time it took.
type backfilled struct {
	syncer.Summary
	pagesRate float64
	wall      time.Duration
	rss       float64
	cpu       cpuTime
}

// usersyncApp is the application_name of usersync's connections
// (jobs/fleet/config/pool.go).
const usersyncApp = "usersync"

// backfill runs usersync sync --full and returns what it did and took.
func (b *bench) backfill(ctx context.Context, env []string) (backfilled, error) {
	var sum backfilled
	env = append(env, "USERSYNC_LOG_LEVEL=debug", "USERSYNC_LOG_FORMAT=json") // for pagesRate
	pg, err := b.serverCPU(ctx, usersyncApp)
	if err != nil {
		return sum, err
	}
	own, err := benchCPU()
	if err != nil {
		return sum, err
	}
	run, err := b.commandOutput(ctx, env, "sync", "--full", "--json")
	sum.wall, sum.rss, sum.cpu.usersync = run.wall, run.rss, run.cpu
	if err != nil {
		return sum, err
	}
	if sum.cpu.bench, err = benchCPU(); err != nil {
		return sum, err
	}
	if sum.cpu.server, err = b.serverCPU(ctx, usersyncApp); err != nil {
		return sum, err
	}
	sum.cpu.server -= pg
	sum.cpu.bench -= own
	if err := json.Unmarshal([]byte(run.stdout), &sum.Summary); err != nil {
		return sum, fmt.Errorf("reading the sync summary: %w", err)
	}
	sum.pagesRate = pagesRate(run.stderr)
	return sum, nil
}

// pagesRate is the rate of a run's users pages alone, from its debug log:
// the rows of every page but the first over the time from the first
// page's commit to the last's. It leaves out what a run does once however
// many users it writes (process start, the dimension lists, the first
// page, the team_id index, ANALYZE), which weighs more the smaller the run.
// 0 when the run committed fewer than two pages.
func pagesRate(log string) float64 {
	var first, last time.Time
	rows := 0
	for line := range strings.Lines(log) {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
			Rows int       `json:"rows"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "page committed" {
			continue
		}
		if first.IsZero() {
			first = rec.Time
		} else {
			rows += rec.Rows
		}
		last = rec.Time
	}
	if rows == 0 || !last.After(first) {
		return 0
	}
	return float64(rows) / last.Sub(first).Seconds()
}
