package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

type bench struct {
	root, bin, tmp, pgURL string
	duckdb                string // bench/duckdb with its node_modules; empty: DuckDB is not run
	pool                  *pgxpool.Pool
	postmaster            int // the server's process id, for its CPU time (see serverCPU)
	log                   io.Writer
	commands              string // usersync help, to know which commands exist
}

// newBench starts the bench database and readies the usersync binary: bin
// when set (another commit's, to compare it under this harness), else one
// built from this tree.
func newBench(ctx context.Context, log io.Writer, duckdb bool, bin string) (*bench, error) {
	b := &bench{log: log}
	var err error
	if b.root, err = repoRoot(); err != nil {
		return nil, err
	}
	if duckdb {
		if b.duckdb, err = setupDuckDB(ctx, b.root, log); err != nil {
			return nil, err
		}
	}
	if b.tmp, err = os.MkdirTemp("", "usersync-bench"); err != nil {
		return nil, err
	}
	if b.bin, err = usersyncBinary(ctx, b.root, b.tmp, bin); err != nil {
		return nil, err
	}
	help, err := exec.CommandContext(ctx, b.bin, "help").Output()
	if err != nil {
		return nil, fmt.Errorf("running %s help: %w", b.bin, err)
	}
	b.commands = string(help)
	pg := exec.CommandContext(ctx, filepath.Join(b.root, "deploy/dev/postgres.sh"), "up")
	pg.Env = append(os.Environ(), "USERSYNC_DEV_PG_NAME=bench", "PG_PORT_FIRST=56700", "DATABASE_URL=")
	out, err := pg.Output()
	if err != nil {
		return nil, fmt.Errorf("starting the bench database: %w", err)
	}
	b.pgURL = strings.TrimSpace(string(out))
	if b.pool, err = pgxpool.New(ctx, b.pgURL); err != nil {
		return nil, err
	}
	if b.postmaster, err = postmaster(ctx, b.pool); err != nil {
		return nil, err
	}
	return b, nil
}

// postmaster returns the process id of pool's server: the parent of one
// of its backends.
func postmaster(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, fmt.Errorf("finding the bench server's process: %w", err)
	}
	f, err := procStat(backend, 1) // the parent's id
	if err != nil {
		return 0, fmt.Errorf("finding the bench server's process (it must run on this machine): %w", err)
	}
	return int(f[0]), nil
}

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

// usersyncBinary returns bin made absolute or, when bin is empty, a binary
// built from root into tmp.
func usersyncBinary(ctx context.Context, root, tmp, bin string) (string, error) {
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("-bin: %w", err)
		}
		return abs, nil
	}
	bin = filepath.Join(tmp, "usersync")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/usersync")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building usersync: %w: %s", err, out)
	}
	return bin, nil
}

func (b *bench) close(keep bool) {
	b.pool.Close()
	if !keep {
		pg := exec.CommandContext(context.Background(), filepath.Join(b.root, "deploy/dev/postgres.sh"), "wipe")
		pg.Env = append(os.Environ(), "USERSYNC_DEV_PG_NAME=bench")
		_ = pg.Run()
	}
	_ = os.RemoveAll(b.tmp)
}

// result holds one dataset size's figures; rates are rows per second.
type result struct {
	users                           int
	serveRate, decodeRate, copyRate float64
	copyRates                       []float64       // each raw COPY measured
	copyCPU                         []time.Duration // each raw COPY's backend CPU time
	fullCPU                         []cpuTime       // each replayed backfill's
	fullRates                       []float64       // each replayed backfill measured
	fullRate, fullRSS               float64         // the faster replayed backfill (see replay); the higher RSS
	pagesRates                      []float64       // each replayed backfill's users pages alone (see pagesRate)
	replayed                        int             // users pages the replay answered in a backfill
	liveRate                        float64         // the same backfill, the simulator rendering every page
	fullTime                        time.Duration
	fullRequests, minRequests       int64
	incrRequests, incrVersions      int64
	incrRate                        float64
	noopRequests                    int64
	noopTime                        time.Duration
	reconcileRequests               int64
	reconcileTime                   time.Duration
	reconcileRSS                    float64
	haveReconcile                   bool
	snap                            *snapshotResult // nil: this usersync has no snapshot command
}

func (b *bench) measure(ctx context.Context, n int) (result, error) {
	r := result{users: n}
	name := fmt.Sprintf("bench_%d", n)
	if err := b.dropSchema(ctx, name); err != nil {
		return r, err
	}
	fmt.Fprintf(b.log, "bench: %d users: building the simulated dataset\n", n)
	sim := apisim.New(apisim.Options{Seed: 1, Users: n})
	rp := newReplay(sim)
	srv := httptest.NewServer(rp)
	defer srv.Close()
	schemaEnv := func(schemaName string) []string {
		return append(os.Environ(), "DATABASE_URL="+b.pgURL, "USERSYNC_SCHEMA="+schemaName, "USERSYNC_READER_ROLE=",
			"USERSYNC_API_URL="+srv.URL, "USERSYNC_API_TOKEN=bench", "USERSYNC_PAGE_SIZE=1000", "USERSYNC_LOG_LEVEL=warn")
	}
	env := schemaEnv(name)
	if _, _, _, err := b.command(ctx, env, "migrate"); err != nil {
		return r, err
	}
	// The raw COPY and the replayed backfill are each measured twice,
	// alternately (this machine's speed drifts by tens of percent within
	// minutes), and the ratio is taken between the faster of each.
	fmt.Fprintf(b.log, "bench: %d users: limits (serve, decode, raw COPY)\n", n)
	rp.set(recording)
	b.quiesce(ctx)
	copyRate, copyCPU, err := b.limits(ctx, &r, srv.URL, name)
	if err != nil {
		return r, err
	}
	r.copyRates, r.copyCPU = append(r.copyRates, copyRate), append(r.copyCPU, copyCPU)
	teams := len(sim.Teams())
	r.minRequests = int64(ceilDiv(n, 1000) + ceilDiv(teams, 1000) + 1 + 1)
	rp.set(replaying)
	for i, target := range []string{name, name + "_again"} {
		if i > 0 {
			fmt.Fprintf(b.log, "bench: %d users: raw COPY again\n", n)
			b.quiesce(ctx)
			if copyRate, copyCPU, err = b.limits(ctx, nil, srv.URL, name); err != nil {
				return r, err
			}
			r.copyRates, r.copyCPU = append(r.copyRates, copyRate), append(r.copyCPU, copyCPU)
			if _, _, _, err := b.command(ctx, schemaEnv(target), "migrate"); err != nil {
				return r, err
			}
		}
		fmt.Fprintf(b.log, "bench: %d users: full backfill, users pages replayed\n", n)
		b.quiesce(ctx)
		rp.set(replaying) // counts this backfill's replayed pages from zero
		sum, err := b.backfill(ctx, schemaEnv(target))
		if err != nil {
			return r, err
		}
		r.pagesRates, r.fullCPU = append(r.pagesRates, sum.pagesRate), append(r.fullCPU, sum.cpu)
		// Pages the recording did not hold are rendered by the simulator on
		// these cores: the backfill would not be the one this column means.
		if r.replayed = rp.set(replaying); int64(r.replayed) < sum.Pages {
			return r, fmt.Errorf("the replay answered %d of the backfill's %d users pages: its requests differ from the recording walk's", r.replayed, sum.Pages)
		}
		rate := float64(sum.Fetched) / sum.wall.Seconds()
		r.fullRates = append(r.fullRates, rate)
		if rate > r.fullRate {
			r.fullRate, r.fullTime = rate, sum.wall
		}
		r.fullRSS, r.fullRequests = max(r.fullRSS, sum.rss), max(r.fullRequests, sum.Requests)
		if i > 0 {
			if err := b.dropSchema(ctx, target); err != nil {
				return r, err
			}
		}
	}
	r.copyRate = slices.Max(r.copyRates)
	rp.set(passThrough)

	fmt.Fprintf(b.log, "bench: %d users: full backfill, simulator rendering every page\n", n)
	live := name + "_live"
	if _, _, _, err := b.command(ctx, schemaEnv(live), "migrate"); err != nil {
		return r, err
	}
	b.quiesce(ctx)
	lb, err := b.backfill(ctx, schemaEnv(live))
	if err != nil {
		return r, err
	}
	r.liveRate = float64(lb.Fetched) / lb.wall.Seconds()
	if err := b.dropSchema(ctx, live); err != nil {
		return r, err
	}

	sim.UpdateUsers(n / 100)
	fmt.Fprintf(b.log, "bench: %d users: incremental after 1%% changed\n", n)
	out, d, _, err := b.command(ctx, env, "sync", "--json")
	if err != nil {
		return r, err
	}
	var sum syncer.Summary
	_ = json.Unmarshal([]byte(out), &sum)
	r.incrRequests, r.incrVersions, r.incrRate = sum.Requests, sum.Versions, float64(sum.Fetched)/d.Seconds()

	if out, d, _, err = b.command(ctx, env, "sync", "--json"); err != nil {
		return r, err
	}
	sum = syncer.Summary{}
	_ = json.Unmarshal([]byte(out), &sum)
	r.noopRequests, r.noopTime = sum.Requests, d

	if strings.Contains(b.commands, "  reconcile ") {
		fmt.Fprintf(b.log, "bench: %d users: reconcile\n", n)
		out, d, rss, err := b.command(ctx, env, "reconcile", "--json")
		if err != nil {
			return r, err
		}
		var rec struct {
			Requests int64 `json:"requests"`
		}
		_ = json.Unmarshal([]byte(out), &rec)
		r.haveReconcile, r.reconcileRequests, r.reconcileTime, r.reconcileRSS = true, rec.Requests, d, rss
	}
	if strings.Contains(b.commands, "  snapshot ") {
		fmt.Fprintf(b.log, "bench: %d users: snapshot\n", n)
		if r.snap, err = b.snapshot(ctx, env, name); err != nil {
			return r, err
		}
	}
	_ = b.dropSchema(ctx, name)
	return r, nil
}

// limits walks every page of users once, as a sync asks for them: it times
// fetching the bodies (the simulator's serving rate), decoding and typing
// them (the sync's single pass, normalize.DecodeData), and a raw COPY of the
// typed rows, hashed beforehand, into an empty copy of the users table with
// its indexes, one transaction per page, on a connection of its own. It
// returns the raw COPY's rate and the CPU time of that connection's backend
// and, when r is not nil, sets r's serving and decoding rates.
func (b *bench) limits(ctx context.Context, r *result, base, name string) (float64, time.Duration, error) {
	raw := schema.QuoteIdentifier(name) + ".users_raw"
	if _, err := b.pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s.users INCLUDING ALL)`, raw, schema.QuoteIdentifier(name))); err != nil {
		return 0, 0, err
	}
	// Dropped once measured: autovacuum would otherwise vacuum its million
	// freshly inserted rows while the backfill runs, on the same cores.
	defer func() { _, _ = b.pool.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+raw) }()
	cfg, err := pgxpool.ParseConfig(b.pgURL)
	if err != nil {
		return 0, 0, err
	}
	cfg.MaxConns, cfg.ConnConfig.RuntimeParams["application_name"] = 1, rawCopyApp
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		return 0, 0, err
	}
	cpu0, err := b.serverCPU(ctx, rawCopyApp)
	if err != nil {
		return 0, 0, err
	}
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: base, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		return 0, 0, err
	}
	norm := normalize.New(schema.User())
	var fetch, decode, copying time.Duration
	users := 0
	// The backfill's own first request, so that it is answered from the
	// recording.
	q := syncer.New(client, nil, syncer.Config{PageSize: 1000}).FullUsersQuery()
	pages := client.Collection("users", q).DecodeData(func(body []byte) (any, int, error) {
		start := time.Now()
		defer func() { decode += time.Since(start) }()
		return norm.DecodeData(body)
	})
	for {
		start := time.Now()
		page, err := pages.Next(ctx)
		fetch += time.Since(start)
		if err != nil {
			return 0, 0, err
		}
		if page == nil {
			break
		}
		rows := page.Decoded.(*normalize.Page).Rows
		users += len(rows)
		took, err := store.CopyUsersRaw(ctx, "users_raw", rows, 1000) // times the COPY alone
		if err != nil {
			return 0, 0, err
		}
		copying += took
	}
	pool.Close()
	cpu, err := b.serverCPU(ctx, rawCopyApp)
	if err != nil {
		return 0, 0, err
	}
	n := float64(users)
	if r != nil {
		r.serveRate, r.decodeRate = n/(fetch-decode).Seconds(), n/decode.Seconds()
	}
	return n / copying.Seconds(), cpu - cpu0, nil
}

// rawCopyApp is the application_name of the raw COPY's connection.
const rawCopyApp = "usersync-bench-raw-copy"

// dropSchema drops a warehouse schema and its River schema.
func (b *bench) dropSchema(ctx context.Context, name string) error {
	for _, s := range []string{name, name + "_river"} {
		if _, err := b.pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`); err != nil {
			return err
		}
	}
	return nil
}

// quiesce readies the database for a timed step: it waits, up to five
// minutes, until no autovacuum worker is busy (a step must not share the
// cores with the vacuum of rows an earlier one inserted), then forces a
// checkpoint, so every step starts just after one: a checkpoint that falls
// within a step makes it write full pages to the WAL for every page it
// touches next, and moved the raw COPY by up to half from run to run.
func (b *bench) quiesce(ctx context.Context) {
	for range 300 {
		var busy int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND state = 'active'`).Scan(&busy)
		if err != nil || busy == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	_, _ = b.pool.Exec(ctx, `CHECKPOINT`)
}

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
// (cmd/usersync/cli/db.go).
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

// cpuTime is the CPU time (user and system) of a step: usersync's process,
// the PostgreSQL server's and the bench's own (its replay serving the
// pages, which a real API would serve from other machines).
type cpuTime struct{ usersync, server, bench time.Duration }

func (c cpuTime) total() time.Duration { return c.usersync + c.server + c.bench }

// benchCPU returns the CPU time the bench's process has used so far.
func benchCPU() (time.Duration, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, fmt.Errorf("reading the bench's CPU time: %w", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), nil
}

// serverCPU returns the CPU time (user and system) the PostgreSQL server
// has used so far, once no backend of the given application_name is left:
// the postmaster's own, its children's that have exited, and the running
// children's (the checkpointer, the WAL writer, autovacuum workers, the
// bench's own connections). A step is the difference of two calls around
// it. A backend that left pg_stat_activity is exiting: its time is counted
// whether or not the postmaster has reaped it yet (a zombie keeps its
// times). The bench's server is local, so its processes are in /proc.
func (b *bench) serverCPU(ctx context.Context, app string) (time.Duration, error) {
	for i := 0; ; i++ {
		var left int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&left)
		if err != nil {
			return 0, fmt.Errorf("waiting for the %s backends to exit: %w", app, err)
		}
		if left == 0 {
			break
		}
		if i == 500 {
			return 0, fmt.Errorf("waiting for the %s backends to exit: %d still there after 5 s", app, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pm := strconv.Itoa(b.postmaster)
	children, err := os.ReadFile("/proc/" + pm + "/task/" + pm + "/children")
	if err != nil {
		return 0, fmt.Errorf("listing the server's processes: %w", err)
	}
	var ticks int64
	for _, c := range strings.Fields(string(children)) {
		pid, err := strconv.Atoi(c)
		if err != nil {
			return 0, fmt.Errorf("listing the server's processes: %w", err)
		}
		// A child that has gone since the list was read is in the
		// postmaster's times, read after it (one that goes between its
		// own read and the postmaster's is counted twice: at the quiet
		// moments between steps, that is an autovacuum worker at most).
		if f, err := procStat(pid, 11, 12); err == nil { // utime, stime
			ticks += f[0] + f[1]
		}
	}
	f, err := procStat(b.postmaster, 11, 12, 13, 14) // utime, stime, cutime, cstime
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time: %w", err)
	}
	ticks += f[0] + f[1] + f[2] + f[3]
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

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

func ceilDiv(a, b int) int { return int(math.Ceil(float64(a) / float64(b))) }

func printTable(w io.Writer, rs []result, cores int) {
	k := func(v float64) string { return fmt.Sprintf("%.1fk", v/1000) }
	all := func(rates []float64) string {
		var out []string
		for _, v := range rates {
			out = append(out, k(v))
		}
		return strings.Join(out, ", ")
	}
	fmt.Fprintf(w, "| users | serve (rows/s) | decode (rows/s) | raw COPY, best (each) (rows/s) | full backfill, best (each) (rows/s) | backfill / raw COPY | users pages alone, best (each) (rows/s) | pages alone / raw COPY | pages replayed | backfill, live simulator (rows/s) | live / raw COPY | requests (min) | peak RSS | incremental 1%%: requests, versions, rows/s | no-op: requests, time | reconcile: requests, time, RSS | snapshot: time, rows/s, MiB, RSS | CPU s, raw COPY: PostgreSQL (each) | CPU s, backfill: usersync + PostgreSQL + replay (each) | backfill / raw COPY, CPU bound on %d cores |\n", cores)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---|---|---:|")
	for _, r := range rs {
		rec, snap := "n/a", "n/a"
		if r.haveReconcile {
			rec = fmt.Sprintf("%d, %.1fs, %.0f MiB", r.reconcileRequests, r.reconcileTime.Seconds(), r.reconcileRSS)
		}
		if s := r.snap; s != nil {
			snap = fmt.Sprintf("%.1fs, %s, %.1f, %.0f MiB", s.wall.Seconds(), k(s.allRate), float64(s.bytes)/(1<<20), s.rss)
		}
		pages := slices.Max(r.pagesRates)
		var copyCPU, fullCPU []string
		for _, c := range r.copyCPU {
			copyCPU = append(copyCPU, fmt.Sprintf("%.2f", c.Seconds()))
		}
		least := r.fullCPU[0].total()
		for _, c := range r.fullCPU {
			fullCPU = append(fullCPU, fmt.Sprintf("%.2f + %.2f + %.2f", c.usersync.Seconds(), c.server.Seconds(), c.bench.Seconds()))
			least = min(least, c.total())
		}
		// The backfill cannot take less wall time than its CPU time, and
		// the replay's beside it, spread over every core: the ratio it
		// cannot exceed at that cost on this machine.
		bound := float64(r.users) / (least.Seconds() / float64(cores)) / r.copyRate
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %.2f | %s | %.2f | %d | %s | %.2f | %d (%d) | %.0f MiB | %d, %d, %s | %d, %.2fs | %s | %s | %s | %s | %.2f |\n",
			r.users, k(r.serveRate), k(r.decodeRate), k(r.copyRate)+" ("+all(r.copyRates)+")",
			k(r.fullRate)+" ("+all(r.fullRates)+")", r.fullRate/r.copyRate,
			k(pages)+" ("+all(r.pagesRates)+")", pages/r.copyRate, r.replayed, k(r.liveRate), r.liveRate/r.copyRate, r.fullRequests, r.minRequests, r.fullRSS, r.incrRequests, r.incrVersions, k(r.incrRate),
			r.noopRequests, r.noopTime.Seconds(), rec, snap, strings.Join(copyCPU, ", "), strings.Join(fullCPU, ", "), bound)
	}
}
