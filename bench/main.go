// Command bench measures usersync on this machine and prints a table: the
// limits of each stage (the simulator serving pages to a client that only
// reads them, decoding those pages, a raw COPY of the same rows into an empty
// copy of the users table with its indexes), then the real binary's full backfill, incremental
// and no-op syncs, reconcile and snapshot, each with its requests and the
// process's peak RSS, at several dataset sizes, and the CPU time of the raw
// COPY and the backfill: the backfill's CPU per user is its usersync and
// PostgreSQL CPU over the raw COPY's (see cpuPerUser). A second table sets the
// snapshot beside DuckDB writing the same users to Parquet with zstd
// (bench/duckdb/write.mjs, run with node; the DuckDB package is pinned in
// bench/duckdb/package-lock.json and installed by `npm ci` on first use), and
// a third shows how the backfill and the snapshot grow with the dataset.
//
//	go run ./bench -users 10000,100000,1000000
//	go run ./bench -users 10000 -duckdb=false   # without node
//	go run ./bench -users 100000 -duckdb=false -bin /tmp/old/usersync   # another commit's binary
//
// bench/compare.sh runs the last form for two commits in turn.
//
// The fleet mode measures a worker instead, per kind of job: N accounts
// (default 11) of 100 users where nothing changes, syncs @every 2s (fleet.go,
// docs/sizing.md); bench/fleet-compare.sh runs it for two commits in turn.
//
//	go run ./bench -fleet -accounts 11 -window 30s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-fleet" || args[0] == "--fleet") {
		return runFleet(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("users", "10000,100000,1000000", "dataset sizes, comma-separated")
	keep := fs.Bool("keep", false, "keep the bench database cluster running afterwards")
	duckdb := fs.Bool("duckdb", true, "compare the snapshot with DuckDB writing the same users (node and npm; npm ci into bench/duckdb)")
	bin := fs.String("bin", "", "time this usersync binary (another commit's: see bench/compare.sh) instead of one built from this tree; the raw COPY, serve and decode columns stay this tree's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "bench: -users: %q is not a positive number\n", s)
			return 2
		}
		ns = append(ns, n)
	}
	b, err := newBench(ctx, stderr, *duckdb, *bin)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer b.close(*keep)
	fmt.Fprintf(stdout, "usersync bench, %s, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine())
	var results []result
	for _, n := range ns {
		r, err := b.measure(ctx, n)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %d users: %v\n", n, err)
			return 1
		}
		results = append(results, r)
	}
	printTable(stdout, results, runtime.NumCPU())
	fmt.Fprintln(stdout)
	printSnapshots(stdout, results)
	fmt.Fprintln(stdout)
	printGrowth(stdout, results)
	return 0
}

func machine() string {
	cpus := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cpus = strconv.Itoa(strings.Count(string(b), "processor\t:"))
	}
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			if kb, err := strconv.Atoi(f[1]); err == nil {
				mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return cpus + " CPUs, " + mem
}

// ran is what one run of the usersync binary printed and took.
type ran struct {
	stdout, stderr string
	wall           time.Duration
	rss            float64       // peak, MiB (see watchPeakRSS)
	cpu            time.Duration // the process's own, user and system
}

// command runs the usersync binary and returns its stdout, its wall time and
// its peak RSS in MiB.
func (b *bench) command(ctx context.Context, env []string, args ...string) (string, time.Duration, float64, error) {
	r, err := b.commandOutput(ctx, env, args...)
	return r.stdout, r.wall, r.rss, err
}

// commandOutput runs the usersync binary and returns all of what it took.
func (b *bench) commandOutput(ctx context.Context, env []string, args ...string) (ran, error) {
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	rss, err := runWatched(cmd)
	r := ran{stdout: out.String(), stderr: errb.String(), wall: time.Since(start), rss: rss}
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return r, fmt.Errorf("usersync %s: %w: %s", strings.Join(args, " "), err, lastLine(r.stderr))
	}
	return r, nil
}

// runWatched runs cmd and returns its peak RSS in MiB (see watchPeakRSS).
func runWatched(cmd *exec.Cmd) (float64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	peak := make(chan float64)
	go func() { peak <- watchPeakRSS(cmd.Process.Pid, done) }()
	err := cmd.Wait()
	close(done)
	return <-peak, err
}

// watchPeakRSS returns the peak resident set size of process pid in MiB:
// the kernel's high-water mark of its memory (VmHWM), read every 20 ms until
// done is closed. The rusage of a finished child cannot be used: Linux
// starts a child's maximum from its parent's RSS when it execs, and the
// bench holds the simulated dataset (and, while replaying, its pages).
func watchPeakRSS(pid int, done <-chan struct{}) float64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var peak float64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
					if kb, err := strconv.ParseFloat(f[1], 64); err == nil && kb/1024 > peak {
						peak = kb / 1024
					}
				}
			}
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
