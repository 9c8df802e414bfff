package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/usersync/usersync/bench/jobcost"
	"github.com/usersync/usersync/sync/apisim"
)

// fleetOptions are the flags of the fleet mode (go run ./bench -fleet).
type fleetOptions struct {
	accounts, users, top              int
	syncEvery, reconcile, snapshot    time.Duration
	tick, window, statements, sampled time.Duration
	bin                               string
	keep                              bool
}

// fleetSchema is the fleet's USERSYNC_SCHEMA; its River schema is
// fleetSchema_river.
const fleetSchema = "fleetbench"

// runFleet is the fleet mode: N accounts registered with usersync accounts
// add on a simulated API where nothing changes, a real worker syncing them
// on @every 2s once each has had its first full sync, and a window measured:
// what each kind of job costs (jobcost), and the whole database's commits
// and temporary tables per sync run. A second, shorter window logs every
// statement (which costs the server CPU, hence not in the first) for the
// statements and commits per job.
func runFleet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := fleetFlags(args, stderr)
	if err != nil {
		return 2
	}
	b, err := newBench(ctx, stderr, false, o.bin)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	defer b.close(o.keep)
	f, err := b.fleet(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "bench -fleet: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "usersync bench -fleet, %s, %s, binary %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), b.version(ctx))
	f.print(stdout, o)
	return 0
}

func fleetFlags(args []string, stderr io.Writer) (fleetOptions, error) {
	var o fleetOptions
	fs := flag.NewFlagSet("bench -fleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.accounts, "accounts", 11, "accounts registered (usersync accounts add)")
	fs.IntVar(&o.users, "account-users", 100, "users of each account")
	fs.DurationVar(&o.syncEvery, "sync-every", 2*time.Second, "each account's sync schedule (@every)")
	fs.DurationVar(&o.reconcile, "reconcile-every", 0, "each account's reconcile schedule (@every); 0: off")
	fs.DurationVar(&o.snapshot, "snapshot-every", 0, "each account's snapshot schedule (@every), into a temporary folder; 0: off")
	fs.DurationVar(&o.tick, "fleet-tick", time.Second, "USERSYNC_FLEET_TICK")
	fs.DurationVar(&o.window, "window", 30*time.Second, "the measured window (CPU, commits, temporary tables, jobs/s)")
	fs.DurationVar(&o.statements, "statements-window", 10*time.Second, "the window after it with every statement logged (statements and commits per job); 0: none")
	fs.DurationVar(&o.sampled, "sample-every", 10*time.Millisecond, "how often the CPU times are read")
	fs.StringVar(&o.bin, "bin", "", "measure this usersync binary (another commit's: bench/fleet-compare.sh) instead of one built from this tree")
	fs.IntVar(&o.top, "top", 8, "list the statements that make the most commits of syncs, ticks and between jobs (0: none)")
	fs.BoolVar(&o.keep, "keep", false, "keep the bench database cluster running afterwards")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.accounts < 1 || o.users < 1 || o.syncEvery < time.Second || o.window < time.Second {
		fmt.Fprintln(stderr, "bench -fleet: -accounts and -account-users must be positive, -sync-every and -window at least 1s")
		return o, errors.New("bad flags")
	}
	return o, nil
}

// fleetRun is one fleet mode's state.
type fleetRun struct {
	b      *bench
	o      fleetOptions
	env    []string
	worker *exec.Cmd
}

// fleet registers the accounts, runs the worker and measures.
func (b *bench) fleet(ctx context.Context, o fleetOptions) (*fleetFigures, error) {
	if err := b.dropSchema(ctx, fleetSchema); err != nil {
		return nil, fmt.Errorf("dropping the last run's schemas: %w", err)
	}
	for i := range o.accounts {
		if err := b.dropSchema(ctx, fmt.Sprintf("%s_acct_%02d", fleetSchema, i+1)); err != nil {
			return nil, fmt.Errorf("dropping the last run's schemas: %w", err)
		}
	}
	fo := apisim.FleetOptions{Seed: 1, Default: &apisim.Options{Seed: 1, Users: 10, Token: "bench-default"}}
	for i := range o.accounts {
		fo.Accounts = append(fo.Accounts, apisim.AccountOptions{Name: fmt.Sprintf("acct_%02d", i+1), Options: apisim.Options{Users: o.users}})
	}
	if err := fo.Validate(); err != nil {
		return nil, err
	}
	fleet := apisim.NewFleet(fo)
	srv := httptest.NewServer(fleet)
	defer srv.Close()
	r := &fleetRun{b: b, o: o, env: fleetEnv(b.pgURL, srv.URL, o)}
	if err := r.register(ctx, srv.URL, fleet); err != nil {
		return nil, err
	}
	if err := r.startWorker(); err != nil {
		return nil, err
	}
	defer r.stopWorker()
	if err := r.awaitFirstSyncs(ctx); err != nil {
		return nil, err
	}
	return r.measure(ctx)
}

// fleetEnv is the worker's and the commands' environment: the default
// account has no schedule (the accounts registered are the fleet).
func fleetEnv(pgURL, apiURL string, o fleetOptions) []string {
	snapDir := "off"
	if o.snapshot > 0 {
		snapDir = filepath.Join(os.TempDir(), "usersync-fleetbench-snapshots")
		_ = os.RemoveAll(snapDir)
	}
	return append(os.Environ(), "DATABASE_URL="+pgURL, "USERSYNC_SCHEMA="+fleetSchema, "USERSYNC_READER_ROLE=",
		"USERSYNC_API_URL="+apiURL, "USERSYNC_API_TOKEN=bench-default",
		"USERSYNC_SYNC_SCHEDULE=off", "USERSYNC_RECONCILE_SCHEDULE=off", "USERSYNC_SNAPSHOT_SCHEDULE=off",
		"USERSYNC_SNAPSHOT_AFTER_SYNC=false", "USERSYNC_SNAPSHOT_DIR="+snapDir, "USERSYNC_HTTP_ADDR=off",
		"USERSYNC_FLEET_TICK="+o.tick.String(), "USERSYNC_SCHEDULE_MIN_INTERVAL=1s", "USERSYNC_SHUTDOWN_TIMEOUT=10s",
		"USERSYNC_LOG_LEVEL=warn", "USERSYNC_SECRETS_KEY="+strings.Repeat("5c", 32))
}

// register migrates and adds every account through the CLI, as an operator
// would, each with its schedules.
func (r *fleetRun) register(ctx context.Context, apiURL string, fleet *apisim.Fleet) error {
	if _, _, _, err := r.b.command(ctx, r.env, "migrate"); err != nil {
		return err
	}
	every := func(d time.Duration) string {
		if d <= 0 {
			return "off"
		}
		return "@every " + d.String()
	}
	for _, a := range fleet.Accounts() {
		file := filepath.Join(r.b.tmp, "token-"+a.Name)
		if err := os.WriteFile(file, []byte(a.Token+"\n"), 0o600); err != nil {
			return err
		}
		_, _, _, err := r.b.command(ctx, r.env, "accounts", "add", a.Name, "--api-url", apiURL+a.Path, "--api-token-file", file, "--no-views",
			"--sync-schedule", every(r.o.syncEvery), "--reconcile-schedule", every(r.o.reconcile), "--snapshot-schedule", every(r.o.snapshot))
		if err != nil {
			return err
		}
	}
	_, _, _, err := r.b.command(ctx, r.env, "accounts", "views")
	return err
}

func (r *fleetRun) startWorker() error {
	// The worker outlives the call: stopWorker ends it with SIGTERM.
	r.worker = exec.CommandContext(context.WithoutCancel(context.Background()), r.b.bin, "worker")
	r.worker.Env = r.env
	logs, err := os.Create(filepath.Join(r.b.tmp, "worker.log"))
	if err != nil {
		return err
	}
	r.worker.Stdout, r.worker.Stderr = logs, logs
	if err := r.worker.Start(); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	return nil
}

func (r *fleetRun) stopWorker() {
	if r.worker == nil || r.worker.Process == nil || r.worker.ProcessState != nil {
		return
	}
	_ = r.worker.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.worker.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = r.worker.Process.Kill()
		<-done
	}
}

// workerLog is the end of the worker's log, for an error.
func (r *fleetRun) workerLog() string {
	b, _ := os.ReadFile(filepath.Join(r.b.tmp, "worker.log"))
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// awaitFirstSyncs waits until every account has completed two syncs (its
// first, full, and one that changed nothing), then a few periods more.
func (r *fleetRun) awaitFirstSyncs(ctx context.Context) error {
	q := `SELECT count(*) FROM (SELECT 1 FROM "` + fleetSchema + `_river".river_job WHERE kind = 'usersync_sync' AND state = 'completed'
		GROUP BY args->>'account' HAVING count(*) >= 2) a`
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var n int
		err := r.b.pool.QueryRow(ctx, q).Scan(&n)
		if err == nil && n >= r.o.accounts {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = errors.New("no query error")
			}
			return fmt.Errorf("waiting for every account's first syncs: %d of %d after 3 minutes (%w); the worker's log:\n%s", n, r.o.accounts, err, r.workerLog())
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * r.o.syncEvery)
	return nil
}

// jobs reads the jobs of the worker that ran within [from, to].
func (r *fleetRun) jobs(ctx context.Context, from, to time.Time) ([]jobcost.Job, error) {
	rows, err := r.b.pool.Query(ctx, `SELECT kind, attempted_at, finalized_at FROM "`+fleetSchema+`_river".river_job
		WHERE attempted_at IS NOT NULL AND finalized_at IS NOT NULL AND finalized_at >= $1 AND attempted_at <= $2`, from, to)
	if err != nil {
		return nil, fmt.Errorf("reading the jobs: %w", err)
	}
	defer rows.Close()
	var out []jobcost.Job
	for rows.Next() {
		var j jobcost.Job
		if err := rows.Scan(&j.Kind, &j.Start, &j.End); err != nil {
			return nil, fmt.Errorf("reading the jobs: %w", err)
		}
		j.Kind = strings.TrimPrefix(j.Kind, "usersync_")
		out = append(out, j)
	}
	return out, rows.Err()
}

// version is what the binary's version command prints, or its path.
func (b *bench) version(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, b.bin, "version").Output()
	if err != nil {
		return b.bin
	}
	return strings.TrimSpace(string(out))
}
