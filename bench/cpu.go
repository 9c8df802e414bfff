package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/usersync/usersync/bench/jobcost"
)

// cpuTime is the CPU time (user and system) of a step: usersync's process,
// the PostgreSQL server's and the bench's own (its replay serving the
// pages, which a real API would serve from other machines).
type cpuTime struct{ usersync, server, bench time.Duration }

func (c cpuTime) total() time.Duration { return c.usersync + c.server + c.bench }

// sync is what the CPU per user counts of a backfill: usersync and
// the server, not the replay.
func (c cpuTime) sync() time.Duration { return c.usersync + c.server }

// copyCPU is the CPU time of a raw COPY walk's COPYs: the server's during
// them, and the bench's own as their client (encoding the rows, the
// protocol), less hashing the rows (see copyPage). What the walk spends
// fetching and decoding the pages is in neither.
type copyCPU struct{ server, client time.Duration }

func (c copyCPU) total() time.Duration { return c.server + c.client }

// benchCPU returns the CPU time the bench's process has used so far.
func benchCPU() (time.Duration, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, fmt.Errorf("reading the bench's CPU time: %w", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
}

// serverCPU returns the CPU time (user and system) the PostgreSQL server
// has used so far, once no backend of the given application_name is left
// (see serverCPUNow). A step is the difference of two calls around it. A
// backend that left pg_stat_activity is exiting: its time is counted
// whether or not the postmaster has reaped it yet (a zombie keeps its
// times).
func (b *bench) serverCPU(ctx context.Context, app string) (time.Duration, error) {
	if err := b.awaitGone(ctx, app); err != nil {
		return 0, err
	}
	return b.serverCPUNow()
}

// awaitGone waits, up to 5 s, until no backend of the given
// application_name is left.
func (b *bench) awaitGone(ctx context.Context, app string) error {
	for i := 0; ; i++ {
		var left int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&left)
		if err != nil {
			return fmt.Errorf("waiting for the %s backends to exit: %w", app, err)
		}
		if left == 0 {
			return nil
		}
		if i == 500 {
			return fmt.Errorf("waiting for the %s backends to exit: %d still there after 5 s", app, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serverCPUNow returns the CPU time the PostgreSQL server has used so far:
// the postmaster's own, its children's that have exited, and the running
// children's (backends, the checkpointer, the WAL writer, autovacuum
// workers, the bench's own connections). The bench's server is local, so
// its processes are in /proc.
func (b *bench) serverCPUNow() (time.Duration, error) { return jobcost.ServerCPU(b.postmaster) }
