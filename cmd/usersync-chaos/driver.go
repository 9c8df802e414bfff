package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// driver holds the system under test: its own PostgreSQL cluster (so it
// can stop it), the simulator in this process, and worker processes.
type driver struct {
	o       options
	out     io.Writer
	rng     *rand.Rand
	root    string // the repository
	bin     string
	tmp     string
	pgURL   string
	pool    *pgxpool.Pool
	store   *warehouse.Store
	sim     *apisim.Server
	srv     *httptest.Server
	env     []string
	primary *proc
	churn   apisim.Churn
	// fleet and scaleAccounts are the scale run's simulated accounts.
	fleet         *apisim.Fleet
	scaleAccounts []*scaleAccount
	// remaining is the lowest x-ratelimit-remaining the simulator sent.
	remaining lowest
}

// lowest keeps the lowest x-ratelimit-remaining seen.
type lowest struct {
	mu   sync.Mutex
	seen bool
	n    int
}

func (l *lowest) see(h http.Header) {
	first, _, _ := strings.Cut(h.Get("X-Ratelimit-Remaining"), ",")
	n, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen || n < l.n {
		l.seen, l.n = true, n
	}
}

// get returns the lowest seen, and whether any was.
func (l *lowest) get() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.seen
}

const schemaName = "chaos"

func newDriver(ctx context.Context, o options, out io.Writer) (*driver, error) {
	d := &driver{o: o, out: out, rng: rand.New(rand.NewPCG(uint64(o.seed), 7))}
	var err error
	if d.root, err = syncertest.RepoRoot(); err != nil {
		return nil, err
	}
	if d.tmp, err = os.MkdirTemp("", "usersync-chaos"); err != nil {
		return nil, err
	}
	if d.bin, err = buildUsersync(ctx, o.bin, d.root, d.tmp); err != nil {
		return nil, err
	}
	if err := d.freshDatabase(ctx); err != nil {
		return nil, err
	}
	var api http.Handler
	if o.scale.on {
		api = d.scaleSimulator()
	} else {
		api = d.chaosSimulator()
	}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r)
		d.remaining.see(w.Header())
	}))
	d.env = append(os.Environ(),
		"DATABASE_URL="+d.pgURL, "USERSYNC_SCHEMA="+schemaName, "USERSYNC_READER_ROLE=",
		"USERSYNC_API_URL="+d.srv.URL, "USERSYNC_OAUTH_TOKEN_URL="+d.srv.URL+"/oauth/token",
		"USERSYNC_OAUTH_CLIENT_ID=chaos-client", "USERSYNC_OAUTH_CLIENT_SECRET=chaos-client-secret",
		"USERSYNC_OAUTH_REFRESH_TOKEN=chaos-refresh-0",
		"USERSYNC_SYNC_SCHEDULE=@every 2s", "USERSYNC_SCHEDULE_MIN_INTERVAL=1s", "USERSYNC_RECONCILE_SCHEDULE=off", "USERSYNC_SNAPSHOT_SCHEDULE=off",
		"USERSYNC_SNAPSHOT_AFTER_SYNC=false", "USERSYNC_SNAPSHOT_DIR=off", "USERSYNC_HTTP_ADDR=off", "USERSYNC_SHUTDOWN_TIMEOUT=3s",
		"USERSYNC_PAGE_SIZE=200", "USERSYNC_LOOKBACK=1m", "USERSYNC_TIME_SLICE=5s", "USERSYNC_JOB_TIMEOUT=10m",
		"USERSYNC_LOG_LEVEL=warn",
		// The fleet's secrets key: registered accounts' tokens are stored sealed with it.
		"USERSYNC_SECRETS_KEY="+strings.Repeat("5c", 32))
	if out, err := d.usersync(ctx, "migrate"); err != nil {
		return nil, fmt.Errorf("migrating: %w: %s", err, out)
	}
	switch {
	case o.scale.on:
		fmt.Fprintf(d.out, "scale: seed %d, %s, database %s\n", o.seed, o.scale, d.pgURL)
	case o.soak > 0:
		fmt.Fprintf(d.out, "soak: seed %d, %s, %d users, database %s\n", o.seed, o.soak, o.users, d.pgURL)
	default:
		fmt.Fprintf(d.out, "chaos: seed %d, %d faults (%d kill -9), %d users, database %s\n", o.seed, o.faults, o.kills, o.users, d.pgURL)
	}
	return d, nil
}

// chaosSimulator is the fault driver's simulated API: one changing dataset
// whose default account signs in with OAuth.
func (d *driver) chaosSimulator() http.Handler {
	// RestoreEvery brings back teams, roles and profiles, some between two
	// dimension passes (never marked deleted): users written meanwhile hold
	// no link to them until the reconcile's scan shows the API's linkage.
	// The converging sync's lookback re-fetches most such users first, so a
	// run rarely needs the reconcile for it;
	// TestReconcileRelinksWhatNoPassSawDeleted always does.
	d.churn = apisim.Churn{Every: 4, Update: 12, Create: 2, DeleteEvery: 9, Memberships: 2, EditEvery: 7, RestoreEvery: 11}
	d.sim = apisim.New(d.defaultOptions(d.o.users, apisim.Knobs{Churn: d.churn}))
	return d.sim
}

// defaultOptions are the simulated default account's: the driver's
// settings of USERSYNC_OAUTH_* sign in to it.
func (d *driver) defaultOptions(users int, k apisim.Knobs) apisim.Options {
	return apisim.Options{Seed: d.o.seed, Users: users, RefreshToken: "chaos-refresh-0",
		ClientID: "chaos-client", ClientSecret: "chaos-client-secret", TokenTTL: 20 * time.Second, Knobs: k}
}

// buildUsersync returns bin, or builds the usersync binary into tmp when
// bin is empty.
func buildUsersync(ctx context.Context, bin, root, tmp string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin = filepath.Join(tmp, "usersync")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/usersync")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building usersync: %w: %s", err, out)
	}
	return bin, nil
}

// freshDatabase starts the chaos cluster and empties the driver's schemas.
func (d *driver) freshDatabase(ctx context.Context) error {
	var err error
	if d.pgURL, err = d.postgres(ctx, "up"); err != nil {
		return err
	}
	if d.pool, err = pgxpool.New(ctx, d.pgURL); err != nil {
		return fmt.Errorf("connecting to the chaos cluster: %w", err)
	}
	for _, s := range []string{schemaName, schemaName + "_river"} {
		if _, err := d.pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`); err != nil {
			return fmt.Errorf("clearing schema %s: %w", s, err)
		}
	}
	d.store, err = warehouse.NewStore(d.pool, schemaName)
	return err
}

// postgres runs deploy/dev/postgres.sh on the driver's own cluster.
func (d *driver) postgres(ctx context.Context, verb string, extraEnv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(d.root, "deploy/dev/postgres.sh"), verb)
	// A cluster of its own per driver process: two runs on one machine (make
	// chaos beside make test) never share a database.
	cmd.Env = append(os.Environ(), fmt.Sprintf("USERSYNC_DEV_PG_NAME=chaos-%d", os.Getpid()),
		fmt.Sprintf("PG_PORT_FIRST=%d", 56500+os.Getpid()%400), "DATABASE_URL=")
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("postgres.sh %s: %w", verb, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (d *driver) usersync(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = d.env
	return cmd.CombinedOutput()
}

// proc is a worker process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the exit, once done is closed
}

// startWorker starts a worker process, logging to a file in the temp
// folder; extra settings override the driver's.
func (d *driver) startWorker(extra ...string) (*proc, error) {
	cmd := exec.CommandContext(context.WithoutCancel(context.Background()), d.bin, "worker") // lives until stopped or killed
	cmd.Env = append(slices.Clip(d.env), extra...)
	logs, err := os.Create(filepath.Join(d.tmp, fmt.Sprintf("worker-%d.log", time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		_ = logs.Close()
		return nil, fmt.Errorf("starting a worker: %w", err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); _ = logs.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) alive() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(within time.Duration) error {
	if !p.alive() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("worker still running %s after SIGTERM", within)
	}
	if p.err != nil {
		return fmt.Errorf("worker exited after SIGTERM: %w", p.err)
	}
	return nil
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	if p.alive() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (d *driver) close() {
	_ = d.primary.stop(10 * time.Second)
	if d.srv != nil {
		d.srv.Close()
	}
	if d.pool != nil {
		d.pool.Close()
	}
	if d.o.keep {
		fmt.Fprintf(d.out, "kept: the database %s and the worker logs in %s\n", d.pgURL, d.tmp)
		return
	}
	_, _ = d.postgres(context.Background(), "wipe")
	_ = os.RemoveAll(d.tmp)
}
