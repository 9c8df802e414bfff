package jobcost

import (
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAttributeSharesByOverlap: an interval's CPU goes to the jobs running
// in it by the part each overlaps, the rest between jobs; two jobs over the
// same time share it equally.
func TestAttributeSharesByOverlap(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	samples := []Sample{
		{At: at(0), App: 0, Server: 0},
		{At: at(10), App: 10 * time.Millisecond, Server: 20 * time.Millisecond},
		{At: at(20), App: 20 * time.Millisecond, Server: 40 * time.Millisecond},
	}
	jobs := []Job{
		{Kind: "sync", Start: at(0), End: at(5)},   // half of the first interval
		{Kind: "sync", Start: at(10), End: at(20)}, // the second, with the tick
		{Kind: "due", Start: at(10), End: at(20)},
	}
	c := Costs{}
	c.Attribute(samples, jobs)
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if math.Abs(float64(got-want)) > float64(time.Microsecond) {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	near("sync's usersync CPU", c["sync"].App, 5*time.Millisecond+5*time.Millisecond)
	near("the tick's server CPU", c["due"].Server, 10*time.Millisecond)
	near("between jobs", c[Between].App, 5*time.Millisecond)
	c.Finished(jobs, at(6), at(20))
	if c["sync"].Jobs != 1 || c["due"].Jobs != 1 {
		t.Errorf("finished in the window: %d syncs, %d ticks; want 1 and 1", c["sync"].Jobs, c["due"].Jobs)
	}
}

// TestCountCommits: a transaction block commits once, each statement
// outside one commits, and the statements are shared among the jobs
// running when logged; a temporary table is counted.
func TestCountCommits(t *testing.T) {
	log := `2026-01-01 00:00:00.001 UTC [7] LOG:  statement: begin
2026-01-01 00:00:00.002 UTC [7] LOG:  execute stmtcache_1: 
	-- name: stage
	CREATE TEMP TABLE x (id int)
2026-01-01 00:00:00.003 UTC [7] DETAIL:  parameters: $1 = '1'
2026-01-01 00:00:00.004 UTC [7] LOG:  statement: commit
2026-01-01 00:00:00.005 UTC [8] LOG:  execute <unnamed>: SELECT 1
2026-01-01 00:00:00.020 UTC [8] LOG:  execute <unnamed>: SELECT 2
`
	stmts, err := ParseLog(strings.NewReader(log))
	if err != nil || len(stmts) != 5 {
		t.Fatalf("parsed %d statements (%v), want 5", len(stmts), err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jobs := []Job{{Kind: "sync", Start: t0, End: t0.Add(10 * time.Millisecond)}}
	c := Costs{}
	n, commits, temps := c.Count(stmts, jobs, t0, t0.Add(time.Second))
	if n != 5 || commits != 3 || temps != 1 {
		t.Errorf("%d statements, %d commits, %d temporary tables; want 5, 3 and 1", n, commits, temps)
	}
	if c["sync"].Commits != 2 || c[Between].Commits != 1 || c["sync"].Statements != 4 {
		t.Errorf("sync: %.0f statements, %.0f commits; between: %.0f commits; want 4, 2 and 1", c["sync"].Statements, c["sync"].Commits, c[Between].Commits)
	}
}

// TestProcessCPUCountsEveryThread: the process's CPU time is its threads'
// sum, as getrusage counts it, not its first thread's alone.
func TestProcessCPUCountsEveryThread(t *testing.T) {
	rusage := func() time.Duration {
		var u syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
			t.Fatal(err)
		}
		return time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r0 := rusage()
	done := make(chan struct{})
	for range 4 {
		go func() {
			for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
			}
			done <- struct{}{}
		}()
	}
	for range 4 {
		<-done
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	got, want := after-before, rusage()-r0
	if want < 20*time.Millisecond || got < want*8/10 {
		t.Errorf("four goroutines spinning: %s of CPU counted, getrusage says %s", got, want)
	}
}
