package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
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
func (b *bench) serverCPUNow() (time.Duration, error) {
	pm := strconv.Itoa(b.postmaster)
	children, err := os.ReadFile("/proc/" + pm + "/task/" + pm + "/children")
	if err != nil {
		return 0, fmt.Errorf("listing the server's processes: %w", err)
	}
	var running time.Duration
	for _, c := range strings.Fields(string(children)) {
		pid, err := strconv.Atoi(c)
		if err != nil {
			return 0, fmt.Errorf("listing the server's processes: %w", err)
		}
		// A child that has gone since the list was read is in the
		// postmaster's times, read after it (one that goes between its
		// own read and the postmaster's is counted twice: at the quiet
		// moments between steps, that is an autovacuum worker at most).
		if d, err := processCPU(pid); err == nil {
			running += d
		}
	}
	f, err := procStat(b.postmaster, 13, 14) // cutime, cstime
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %w", err)
	}
	own, err := processCPU(b.postmaster)
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %w", err)
	}
	return own + running + time.Duration(f[0]+f[1])*time.Second/clockTicks, nil
}

// processCPU returns the CPU time process pid has used so far: from
// /proc/PID/schedstat, in nanoseconds, where the kernel has it (the raw
// COPY's server time is a sum over a thousand COPYs of a few clock ticks
// each), else from /proc/PID/stat in clock ticks.
func processCPU(pid int) (time.Duration, error) {
	if s, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid)); err == nil {
		if f := strings.Fields(string(s)); len(f) > 0 {
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return time.Duration(ns), nil
			}
		}
	}
	f, err := procStat(pid, 11, 12) // utime, stime
	if err != nil {
		return 0, err
	}
	return time.Duration(f[0]+f[1]) * time.Second / clockTicks, nil
}

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// procStat returns fields of /proc/PID/stat that follow the command's
// name, as numbers: i counts from the state letter, 0 (proc(5) numbers it 3).
func procStat(pid int, i ...int) ([]int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	out := make([]int64, len(i))
	for k, n := range i {
		if n >= len(f) {
			return nil, fmt.Errorf("reading /proc/%d/stat: %d fields", pid, len(f))
		}
		if out[k], err = strconv.ParseInt(f[n], 10, 64); err != nil {
			return nil, fmt.Errorf("reading /proc/%d/stat: %w", pid, err)
		}
	}
	return out, nil
}
