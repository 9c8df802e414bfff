// Package jobcost measures what each kind of River job of a running usersync
// worker costs, from outside its processes, so that any commit's binary can
// be measured by the same code: the CPU time of the worker's processes and of
// the local PostgreSQL server, sampled every few milliseconds from /proc, and
// the statements the server logged, are shared among the jobs running at each
// moment (their attempted_at to finalized_at in River's table), in equal
// parts of the time each overlaps; what falls between jobs (River fetching
// and completing them, the leader's upkeep) is counted apart.
package jobcost

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Between is the kind under which Attribute counts what no job was running
// for.
const Between = "between jobs (River, idle)"

// Job is one job's run, as River recorded it.
type Job struct {
	Kind       string
	Start, End time.Time
}

// Cost is what the jobs of one kind cost within a window.
type Cost struct {
	// Jobs is how many of the kind finished within the window.
	Jobs int
	// App is the worker's CPU time, Server PostgreSQL's.
	App, Server time.Duration
	// Statements and Commits are their shares of the logged statements and
	// of the transactions those committed (see Count).
	Statements, Commits float64
	// Committers are the commits by the statement that made each (its
	// first 80 characters): where a kind's commits come from.
	Committers map[string]float64
}

// Costs are the costs of each kind of job, Between included.
type Costs map[string]*Cost

func (c Costs) of(kind string) *Cost {
	if c[kind] == nil {
		c[kind] = &Cost{}
	}
	return c[kind]
}

// Finished counts, into c, the jobs of each kind that ended within [from, to].
func (c Costs) Finished(jobs []Job, from, to time.Time) {
	for _, j := range jobs {
		if !j.End.Before(from) && !j.End.After(to) {
			c.of(j.Kind).Jobs++
		}
	}
}

// Sample is the CPU time used so far, at one moment, by the worker's
// processes (App) and by the server (Server).
type Sample struct {
	At          time.Time
	App, Server time.Duration
}

// Sampler reads the CPU times every few milliseconds until stopped.
type Sampler struct {
	apps       func() []int
	postmaster int
	stop, done chan struct{}
	mu         sync.Mutex
	samples    []Sample
}

// StartSampler samples every `every` the CPU time of the processes apps
// returns (read at each sample: replicas restart) and of the server whose
// postmaster is given.
func StartSampler(apps func() []int, postmaster int, every time.Duration) *Sampler {
	s := &Sampler{apps: apps, postmaster: postmaster, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				s.sample()
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *Sampler) sample() {
	var app time.Duration
	for _, pid := range s.apps() {
		if d, err := ProcessCPU(pid); err == nil {
			app += d
		}
	}
	server, err := ServerCPU(s.postmaster)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.samples = append(s.samples, Sample{At: time.Now(), App: app, Server: server})
	s.mu.Unlock()
}

// Stop ends the sampling and returns the samples.
func (s *Sampler) Stop() []Sample {
	close(s.stop)
	<-s.done
	return s.samples
}

// Attribute shares, into c, the CPU time between each two samples among the
// jobs running then, each by the part of the interval it overlaps (the
// whole interval, shared equally, when they overlap it more than once over);
// the rest goes to Between. A process that restarts between two samples
// makes its time go back: that interval counts nothing.
func (c Costs) Attribute(samples []Sample, jobs []Job) {
	sorted := sortedJobs(jobs)
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		dApp, dServer := b.App-a.App, b.Server-a.Server
		if dApp < 0 || dServer < 0 || !b.At.After(a.At) {
			continue
		}
		span := float64(b.At.Sub(a.At))
		shares, sum := overlaps(sorted, a.At, b.At, span)
		scale := 1.0
		if sum > 1 {
			scale = 1 / sum
		}
		for kind, share := range shares {
			k := c.of(kind)
			k.App += time.Duration(float64(dApp) * share * scale)
			k.Server += time.Duration(float64(dServer) * share * scale)
		}
		if rest := 1 - sum; rest > 0 {
			k := c.of(Between)
			k.App += time.Duration(float64(dApp) * rest)
			k.Server += time.Duration(float64(dServer) * rest)
		}
	}
}

// sortedJobs returns the jobs by start.
func sortedJobs(jobs []Job) []Job {
	s := append([]Job(nil), jobs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Start.Before(s[j].Start) })
	return s
}

// overlaps returns, per kind, the parts of [from, to] (span long) the jobs
// overlap, and their sum.
func overlaps(sorted []Job, from, to time.Time, span float64) (map[string]float64, float64) {
	shares := map[string]float64{}
	var sum float64
	for _, j := range sorted {
		if !j.Start.Before(to) {
			break
		}
		if !j.End.After(from) {
			continue
		}
		o := float64(minTime(j.End, to).Sub(maxTime(j.Start, from))) / span
		shares[j.Kind] += o
		sum += o
	}
	return shares, sum
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ServerCPU returns the CPU time a local PostgreSQL server has used so far:
// the postmaster's own, its running children's (backends, the checkpointer,
// the WAL writer, autovacuum workers) and those of its children that exited.
func ServerCPU(postmaster int) (time.Duration, error) {
	pm := strconv.Itoa(postmaster)
	children, err := os.ReadFile("/proc/" + pm + "/task/" + pm + "/children")
	if err != nil {
		return 0, fmt.Errorf("listing the server's processes: %w", err)
	}
	var running time.Duration
	for _, c := range strings.Fields(string(children)) {
		if pid, err := strconv.Atoi(c); err == nil {
			if d, err := ProcessCPU(pid); err == nil {
				running += d // one that exited since is in cutime below
			}
		}
	}
	f, err := procStat(postmaster, 13, 14) // cutime, cstime
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %w", err)
	}
	own, err := ProcessCPU(postmaster)
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %w", err)
	}
	return own + running + time.Duration(f[0]+f[1])*time.Second/clockTicks, nil
}

// ProcessCPU returns the CPU time process pid has used so far: the sum of
// its threads' /proc/PID/task/TID/schedstat, in nanoseconds, where the
// kernel has it (a job's share is a few milliseconds, below /proc/PID/stat's
// clock ticks; the process's own schedstat is its first thread's alone),
// else /proc/PID/stat in clock ticks.
func ProcessCPU(pid int) (time.Duration, error) {
	if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err == nil {
		var sum time.Duration
		ok := false
		for _, t := range tasks {
			s, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
			if err != nil {
				continue
			}
			if f := strings.Fields(string(s)); len(f) > 0 {
				if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					sum, ok = sum+time.Duration(ns), true
				}
			}
		}
		if ok {
			return sum, nil
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

// procStat returns fields of /proc/PID/stat after the command's name, as
// numbers: i counts from the state letter, 0.
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

// Kinds are the kinds of job the tables show, in order, with their names
// (River's kind without usersync_).
var Kinds = []struct{ Kind, Name string }{
	{"sync", "sync"}, {"reconcile", "reconcile"}, {"snapshot", "snapshot"}, {"backfill", "backfill"},
	{"due", "the fleet's tick (usersync_due)"}, {"views", "views (usersync_views)"},
}

// WriteTable writes, in Markdown, the cost of a job of each kind: its CPU
// from cpu (over window), its statements and commits from stmts (over
// stmtWindow), the jobs a second the schedules asked for and those done;
// then what fell between jobs, a second.
func WriteTable(w io.Writer, cpu, stmts Costs, asked map[string]float64, window, stmtWindow time.Duration) {
	fmt.Fprintln(w, "| job | jobs/s asked | jobs/s done | usersync CPU ms/job | PostgreSQL CPU ms/job | statements/job | commits/job |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	per := func(v float64, n int) string {
		if n == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", v/float64(n))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, k := range Kinds {
		c, s := cpu[k.Kind], stmts[k.Kind]
		if c == nil && asked[k.Kind] == 0 {
			continue
		}
		c, s = orZero(c), orZero(s)
		askedS := "–"
		if asked[k.Kind] > 0 {
			askedS = fmt.Sprintf("%.2f", asked[k.Kind])
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %s | %s | %s | %s |\n", k.Name, askedS, float64(c.Jobs)/window.Seconds(),
			per(ms(c.App), c.Jobs), per(ms(c.Server), c.Jobs), per(s.Statements, s.Jobs), per(s.Commits, s.Jobs))
	}
	if c := cpu[Between]; c != nil {
		s := orZero(stmts[Between])
		sec := max(stmtWindow.Seconds(), 1e-9)
		fmt.Fprintf(w, "| %s, a second | | | %.1f | %.1f | %.1f | %.1f |\n", Between, ms(c.App)/window.Seconds(), ms(c.Server)/window.Seconds(),
			s.Statements/sec, s.Commits/sec)
	}
}

func orZero(c *Cost) *Cost {
	if c == nil {
		return &Cost{}
	}
	return c
}

// ParentPid returns the parent of process pid (a backend's is the
// postmaster).
func ParentPid(pid int) (int, error) {
	f, err := procStat(pid, 1)
	if err != nil {
		return 0, fmt.Errorf("finding the parent of process %d (the server must run on this machine): %w", pid, err)
	}
	return int(f[0]), nil
}
