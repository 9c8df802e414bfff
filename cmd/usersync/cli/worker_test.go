package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type inProcessWorker struct {
	cancel context.CancelFunc
	done   chan int
	logs   *syncBuffer
	stuck  bool // a stop timed out: the next one does not wait again
}

// startWorker runs `usersync worker` in-process until stop.
func startWorker(t *testing.T, env map[string]string) *inProcessWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &inProcessWorker{cancel: cancel, done: make(chan int, 1), logs: &syncBuffer{}}
	go func() { w.done <- Main(ctx, []string{"worker"}, environ(env), io.Discard, w.logs) }()
	t.Cleanup(func() {
		defer func() { // also when stop fails the test
			if t.Failed() {
				t.Logf("worker logs:\n%s", w.logs.String())
			}
		}()
		w.stop(t)
	})
	return w
}

func (w *inProcessWorker) stop(t *testing.T) int {
	t.Helper()
	if w.stuck {
		return -1
	}
	w.cancel()
	select {
	case code := <-w.done:
		w.done <- code
		return code
	case <-time.After(30 * time.Second):
		w.stuck = true
		t.Fatal("worker did not stop within 30 s of its context's cancellation")
		return -1
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// workerEnv turns the schedules off unless the test sets them, and ticks
// the fleet every second, so that a schedule of seconds is served within one
// rather than within the default tick of 10 s.
func workerEnv(c *cliEnv, extra map[string]string) map[string]string {
	env := map[string]string{"USERSYNC_SYNC_SCHEDULE": "off", "USERSYNC_RECONCILE_SCHEDULE": "off",
		"USERSYNC_SNAPSHOT_SCHEDULE": "off", "USERSYNC_SNAPSHOT_DIR": "off", "USERSYNC_HTTP_ADDR": "off", "USERSYNC_LOOKBACK": "1m",
		"USERSYNC_SHUTDOWN_TIMEOUT": "5s", "USERSYNC_SCHEDULE_MIN_INTERVAL": "1s", "USERSYNC_FLEET_TICK": "1s"}
	for k, v := range c.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-time.After(50 * time.Millisecond)
	}
}

func (c *cliEnv) query(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	q := strings.ReplaceAll(sql, "$schema", `"`+c.store.Schema()+`"`)
	q = strings.ReplaceAll(q, "$river", `"`+c.store.Schema()+`_river"`)
	if err := c.store.Pool().QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWorkerScheduleFollowsMutations: a worker with a schedule of two
// seconds runs cycles; the warehouse follows the simulator's changes; the
// HTTP endpoints answer and the metrics move.
func TestWorkerScheduleFollowsMutations(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 11, Users: 800})
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 2s", "USERSYNC_HTTP_ADDR": addr,
		"USERSYNC_HTTP_TOKEN": "ui-secret-7-0123456789"}))
	succeeded := func(n int64) func() bool {
		return func() bool {
			return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`) >= n
		}
	}
	waitFor(t, "the first scheduled sync", 30*time.Second, succeeded(1))
	syncertest.AssertMirrors(t, c.sim, c.store)
	c.sim.UpdateUsers(20)
	c.sim.CreateUsers(5)
	before := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`)
	waitFor(t, "two more scheduled syncs", 30*time.Second, succeeded(before+2))
	syncertest.AssertMirrors(t, c.sim, c.store)

	base := "http://" + addr
	if code, body := get(t, base+"/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz", ""); code != 200 {
		t.Errorf("/readyz: %d %q", code, body)
	}
	code, metrics := get(t, base+"/metrics", "")
	sch := `schema="` + c.store.Schema() + `"` // every series names its deployment
	for _, want := range []string{`usersync_runs_total{account="default",kind="incremental",` + sch + `,status="succeeded"}`, "usersync_watermark_lag_seconds",
		`usersync_rows_total{account="default",kind="incremental",outcome="updated",` + sch + `}`, `usersync_api_requests_total{account="default",` + sch + `,status="200"}`,
		`usersync_quarantine_unresolved{account="default",` + sch + `} 0`, `usersync_jobs{account="default",kind="usersync_sync",` + sch + `,state="completed"}`} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, "cli-test-token") || strings.Contains(metrics, "ui-secret-7") {
		t.Error("/metrics shows a secret")
	}
	if code, _ := get(t, base+"/riverui/", ""); code != http.StatusUnauthorized {
		t.Errorf("/riverui/ without the token: %d", code)
	}
	if code, body := get(t, base+"/riverui/", "ui-secret-7-0123456789"); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("/riverui/ with the token: %d", code)
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
	if strings.Contains(w.logs.String(), "cli-test-token") {
		t.Error("worker logs show the API token")
	}
	if !strings.Contains(w.logs.String(), `"job_id"`) || !strings.Contains(w.logs.String(), `"run_id"`) {
		t.Error("worker logs lack job and run ids")
	}
}

// TestBackfillWaitFromAnotherProcess: `usersync backfill --wait` in its own
// process queues a job that the worker runs, and returns its outcome.
func TestBackfillWaitFromAnotherProcess(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 12, Users: 2500})
	startWorker(t, workerEnv(c, nil))
	cmd := exec.Command(binary(t), "backfill", "--full", "--wait", "--poll", "200ms")
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("backfill --wait: %v\n%s", err, out)
	}
	for _, want := range []string{"backfill of every user queued: job", "completed after 1 attempt", "2500 received"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	syncertest.AssertMirrors(t, c.sim, c.store)
	// A second identical backfill while none is active is a new job.
	code, stdout, _ := run(t, c.env, "backfill", "--since", "2020-01-01")
	if code != ExitOK || !strings.Contains(stdout, "queued: job") {
		t.Errorf("second backfill: %d %s", code, stdout)
	}
}

// TestBackfillMetricsKind: a full backfill and one over a range are both
// counted kind="backfill" in /metrics, never "full" (the kind sync_runs
// records a full one under).
func TestBackfillMetricsKind(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 19, Users: 200})
	addr := freeAddr(t)
	startWorker(t, workerEnv(c, map[string]string{"USERSYNC_HTTP_ADDR": addr}))
	for _, args := range [][]string{{"backfill", "--full"}, {"backfill", "--since", "2000-01-01", "--until", "2100-01-01"}} {
		if code, _, errs := run(t, c.env, args...); code != ExitOK {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	var metrics string
	waitFor(t, "both backfills in /metrics", 60*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false // not listening yet
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		metrics = string(body)
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) == 2 &&
			strings.Contains(metrics, `usersync_runs_total{account="default",kind="backfill",schema="`+c.store.Schema()+`",status="succeeded"} 2`) ||
			strings.Contains(metrics, `kind="full"`)
	})
	if strings.Contains(metrics, `kind="full"`) {
		t.Errorf("/metrics counts a backfill as kind=\"full\":\n%s", grepLines(metrics, "usersync_r"))
	}
	if !strings.Contains(metrics, `usersync_rows_total{account="default",kind="backfill",outcome="inserted",schema="`+c.store.Schema()+`"} 200`) {
		t.Errorf("/metrics lacks the backfills' 200 inserted users:\n%s", grepLines(metrics, "usersync_r"))
	}
}

// grepLines returns the lines of s that start with prefix.
func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestJobOutcomes: a 429 that asks for a long wait snoozes the job without
// using an attempt; a 401 that no refresh can fix cancels it with the reason.
func TestJobOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("long rate limit snoozes", func(t *testing.T) {
		t.Parallel()
		c := newCLIEnv(t, apisim.Options{Seed: 13, Users: 300, Knobs: apisim.Knobs{RateLimitEvery: 1, RetryAfter: 10 * time.Minute}})
		startWorker(t, workerEnv(c, nil))
		if code, _, errs := run(t, c.env, "backfill", "--full"); code != ExitOK {
			t.Fatal(errs)
		}
		waitFor(t, "the job to snooze", 30*time.Second, func() bool {
			return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'scheduled'
				AND attempt = 0 AND (metadata->>'snoozes')::int >= 1 AND scheduled_at > now() + interval '5 minutes'`) == 1
		})
	})
	t.Run("refused token cancels", func(t *testing.T) {
		t.Parallel()
		c := newCLIEnv(t, apisim.Options{Seed: 14, Users: 300, Token: "the-right-token"})
		w := startWorker(t, workerEnv(c, nil))
		if code, _, errs := run(t, c.env, "backfill", "--full"); code != ExitOK {
			t.Fatal(errs)
		}
		waitFor(t, "the job to be cancelled", 30*time.Second, func() bool {
			return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'cancelled'
				AND errors[1]->>'error' LIKE '%401%'`) == 1
		})
		startCheckSays(t, w, "token", "check USERSYNC_API_TOKEN")
		checkRefusedShown(t, c, c.env, w.logs.String(), "check USERSYNC_API_TOKEN", true)
	})
	t.Run("revoked OAuth grant cancels", func(t *testing.T) {
		t.Parallel()
		a := newAuthEnv(t, apisim.Options{Seed: 14, Users: 300, TokenTTL: time.Hour}, nil)
		if code, _, errs := a.login(t); code != ExitOK {
			t.Fatal(errs)
		}
		a.sim.RevokeTokens()
		w := startWorker(t, workerEnv(a.cliEnv, a.oauth))
		if code, _, errs := run(t, a.oauth, "backfill", "--full"); code != ExitOK {
			t.Fatal(errs)
		}
		waitFor(t, "the job to be cancelled", 30*time.Second, func() bool {
			return a.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'cancelled'
				AND errors[1]->>'error' LIKE '%invalid_grant%'`) == 1
		})
		startCheckSays(t, w, "token", "run usersync auth login")
		checkRefusedShown(t, a.cliEnv, a.oauth, w.logs.String(), "run usersync auth login", false)
		code, _, errs := run(t, a.oauth, "sync")
		if code != ExitFailure || !strings.Contains(errs, "invalid_grant") || !strings.Contains(errs, "run usersync auth login") {
			t.Errorf("sync with a revoked grant: exit %d: %s", code, errs)
		}
	})
}

// checkRefusedShown checks what a worker whose credentials the API refused
// shows: one ERROR line saying what to do (remedy), and nothing at WARN
// with the words of a lock wait; a failed run with the requests it sent;
// status, text and JSON, with the refusal, its remedy and the cancelled job.
// apiRequests says whether the run sent API requests (a refused refresh
// sends none: the token endpoint's are not API requests).
func checkRefusedShown(t *testing.T, c *cliEnv, env map[string]string, logs, remedy string, apiRequests bool) {
	t.Helper()
	var errorLines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) && !strings.Contains(l, startCheckFailed) { // the start check's: see startCheckSays
			errorLines = append(errorLines, l)
		}
	}
	if len(errorLines) != 1 || !strings.Contains(errorLines[0], "refused usersync's credentials") || !strings.Contains(errorLines[0], remedy) {
		t.Errorf("want one ERROR line saying %q; got %d:\n%s", remedy, len(errorLines), strings.Join(errorLines, "\n"))
	}
	if strings.Contains(logs, "run did not finish") || strings.Contains(logs, "cli-test-token") {
		t.Errorf("the logs word the refusal like a lock wait, or show the token:\n%s", logs)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'failed' AND (requests > 0) = $1`, apiRequests); n != 1 {
		t.Errorf("%d failed runs with their requests counted, want 1", n)
	}
	code, out, _ := run(t, env, "status")
	for _, want := range []string{"failed", "credentials  REFUSED", remedy, "gave up      backfill cancelled: 1"} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, env, "status", "--json")
	var st struct {
		Refused *struct {
			RunID  int64  `json:"run_id"`
			Remedy string `json:"remedy"`
		} `json:"credentials_refused"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != ExitOK || err != nil || st.Refused == nil || st.Refused.RunID == 0 ||
		!strings.Contains(st.Refused.Remedy, remedy) {
		t.Errorf("status --json: %v, credentials_refused %+v", err, st.Refused)
	}
	if strings.Contains(out, "cli-test-token") {
		t.Error("status shows the token")
	}
}

// TestTwoWorkers: two worker processes on one database: the schedule fires
// once per tick (no run overlaps another), and both take jobs from the queue.
func TestTwoWorkers(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 15, Users: 500})
	env := workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_LOG_LEVEL": "warn"})
	var procs []*exec.Cmd
	for range 2 {
		cmd := exec.Command(binary(t), "worker")
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var logs bytes.Buffer
		cmd.Stderr = &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		t.Cleanup(func() { _ = cmd.Process.Kill() })
	}
	// Distinct backfill ranges are distinct jobs: both workers take some.
	for i := range 8 {
		day := fmt.Sprintf("2001-01-%02d", i+1)
		if code, _, errs := run(t, c.env, "backfill", "--since", day, "--until", day); code != ExitOK {
			t.Fatal(errs)
		}
	}
	// Runs of one account hand its lock over by snoozing (1 s, doubling to
	// 5 s) rather than waiting in a slot, so the eight backfills queue
	// behind each other for longer than before.
	waitFor(t, "the backfills and several scheduled syncs", 120*time.Second, func() bool {
		// A job that found the lock held completes as a waiter (output lock_wait) and goes on as a new job.
		const ran = `state = 'completed' AND coalesce(metadata->'output'->>'lock_wait', '') <> 'true'`
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND `+ran) == 8 &&
			c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND `+ran) >= 3
	})
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Errorf("worker exit: %v", err)
		}
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs a JOIN $schema.sync_runs b ON a.run_id < b.run_id
		AND a.started_at < coalesce(b.finished_at, now()) AND b.started_at < coalesce(a.finished_at, now())`); n != 0 {
		t.Errorf("%d pairs of runs overlapped", n)
	}
	if n := c.query(t, `SELECT count(DISTINCT attempted_by[1]) FROM $river.river_job WHERE state = 'completed'`); n != 2 {
		t.Errorf("jobs were worked by %d worker(s), want both", n)
	}
	// One periodic sync job at a time: never two active at once.
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state IN ('running', 'available', 'retryable')`); n > 1 {
		t.Errorf("%d sync jobs active at once", n)
	}
}

// TestSIGTERMDuringSync: SIGTERM while a backfill runs: the worker exits 0
// within the shutdown bound, the job is picked up by the next worker, which
// resumes the run, and nothing is lost.
func TestSIGTERMDuringSync(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 16, Users: 6000, Knobs: apisim.Knobs{Latency: 20 * time.Millisecond}})
	env := workerEnv(c, map[string]string{"USERSYNC_PAGE_SIZE": "100", "USERSYNC_SHUTDOWN_TIMEOUT": "4s"})
	cmd := exec.Command(binary(t), "worker")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if code, _, errs := run(t, c.env, "backfill", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	waitFor(t, "the backfill to commit 10 pages", 60*time.Second, func() bool {
		return c.query(t, `SELECT coalesce(max(pages), 0) FROM $schema.sync_runs`) >= 10
	})
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("worker exit after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 4*time.Second+3*time.Second {
		t.Errorf("worker took %s to stop; the bound is 4s", d)
	}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state IN ('scheduled', 'available') AND attempt = 0`); n != 1 {
		t.Errorf("the interrupted job is not waiting to run again without a used attempt (%d)", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'interrupted' AND error LIKE '%shutting down%'`); n != 1 {
		t.Errorf("the drained run is not recorded as interrupted (%d)", n)
	}
	// The drained job snoozes a second: the next worker starts once it is due,
	// so that River's scheduler's first pass makes it available, not the next
	// one, 5 s later.
	waitFor(t, "the interrupted job to be due", 30*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND scheduled_at <= now()`) == 1
	})
	startWorker(t, env)
	waitFor(t, "the resumed backfill", 90*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) == 1
	})
	syncertest.AssertMirrors(t, c.sim, c.store)
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'full' AND status = 'succeeded' AND pages = 60`); n != 1 {
		t.Error("the backfill was not resumed as one run of 60 pages")
	}
}

// TestSIGTERMStartsNoNewSync: SIGTERM while a backfill runs and a scheduled
// sync waits for the sync lock: once the backfill drains and frees the lock,
// the stopping worker starts no sync (no sync_runs row after the signal);
// the sync's job waits for the next worker.
func TestSIGTERMStartsNoNewSync(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 20, Users: 6000})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK { // a watermark: a sync is incremental
		t.Fatal(errs)
	}
	// 60 pages at 150 ms: the backfill outlasts the worker's start, River's first periodic sync
	// and its wait for the lock, even on a loaded machine.
	if err := c.sim.UpdateKnobs(func(k *apisim.Knobs) { k.Latency = 150 * time.Millisecond }); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, c.env, "backfill", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	env := workerEnv(c, map[string]string{"USERSYNC_PAGE_SIZE": "100", "USERSYNC_SHUTDOWN_TIMEOUT": "10s",
		"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_WORKERS": "2"})
	cmd := exec.Command(binary(t), "worker")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	defer func() {
		if t.Failed() {
			t.Logf("worker logs:\n%s", logs.String())
		}
	}()
	// A sync that found the lock held waits as a new job of River's first
	// priority (metadata lock_waits), not in a worker slot.
	waitFor(t, "the backfill to commit 5 pages while a sync job waits for the lock", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'full' AND status = 'running' AND pages >= 5`) == 1 &&
			c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND metadata ? 'lock_waits'
				AND state IN ('available', 'scheduled', 'running', 'retryable')`) >= 1
	})
	last := c.query(t, `SELECT max(run_id) FROM $schema.sync_runs`)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("worker exit after SIGTERM: %v", err)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE run_id > $1`, last); n != 0 {
		t.Errorf("%d runs started after SIGTERM's \"no new jobs\"", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state IN ('scheduled', 'available')`); n < 1 {
		t.Error("the waiting sync's job is not left for the next worker")
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'full' AND status = 'interrupted'`); n != 1 {
		t.Errorf("the drained backfill is not recorded interrupted (%d)", n)
	}
}

// TestKilledWorkerJobIsRescued: a worker killed with SIGKILL mid-backfill
// leaves its job "running"; no live run outlasts its time slice and grace,
// so River's stuck-job rescuer, set just above them, makes the job run
// again, and the next worker resumes the run from its checkpoint as one run.
func TestKilledWorkerJobIsRescued(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 17, Users: 4000, Knobs: apisim.Knobs{Latency: 20 * time.Millisecond}})
	env := workerEnv(c, map[string]string{"USERSYNC_PAGE_SIZE": "100", "USERSYNC_TIME_SLICE": "2s"})
	cmd := exec.Command(binary(t), "worker")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, c.env, "backfill", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	waitFor(t, "the backfill to commit 8 pages", 60*time.Second, func() bool {
		return c.query(t, `SELECT coalesce(max(pages), 0) FROM $schema.sync_runs`) >= 8
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'running'`); n != 1 {
		t.Fatalf("%d running backfill jobs after the kill, want the orphan", n)
	}
	killed := time.Now()
	// River's rescuer runs on its leader, first as the leader starts and then
	// every 30 s: the next worker starts once the orphan is older than the
	// slice and its grace (3 s), so that its rescuer's first pass takes it,
	// and the dead process's leadership is ended as its TTL (15 s) would.
	waitFor(t, "the orphan to outlast its slice and grace", 30*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'running'
			AND attempted_at < now() - interval '3500 ms'`) == 1
	})
	c.query(t, `WITH d AS (DELETE FROM $river.river_leader RETURNING 1) SELECT count(*) FROM d`)
	startWorker(t, env)
	// The rescue: the new leader's rescuer's first pass (within 1 s of its
	// start), River's scheduler's pass (every 5 s).
	waitFor(t, "the resumed backfill", 90*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND state = 'completed'`) == 1
	})
	t.Logf("the killed worker's backfill completed %s after the kill", time.Since(killed).Round(time.Second))
	syncertest.AssertMirrors(t, c.sim, c.store)
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'full' AND status = 'succeeded' AND pages = 40`); n != 1 {
		t.Error("the backfill was not resumed as one run")
	}
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_backfill' AND errors::text LIKE '%Stuck job rescued%'`); n != 1 {
		t.Error("the backfill's job was not rescued by River's rescuer")
	}
}

// TestWorkerRefusesAnOpenJobUI: a worker asked to serve the job UI on an
// address that is not loopback, without a token or basic auth, or with basic
// auth missing a part, exits 2 with one line naming the settings, before
// connecting to anything.
func TestWorkerRefusesAnOpenJobUI(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"USERSYNC_HTTP_ADDR": "0.0.0.0:9090"}, "USERSYNC_HTTP_ADDR=0.0.0.0:9090 is not a loopback address: set USERSYNC_HTTP_TOKEN or USERSYNC_HTTP_BASIC_AUTH"},
		{map[string]string{"USERSYNC_HTTP_ADDR": "127.0.0.1:9090", "USERSYNC_HTTP_BASIC_AUTH": "admin:"}, "USERSYNC_HTTP_BASIC_AUTH must be user:password with neither part empty"},
		// a token or password that can be guessed.
		{map[string]string{"USERSYNC_HTTP_ADDR": "0.0.0.0:9090", "USERSYNC_HTTP_TOKEN": "x"}, "USERSYNC_HTTP_TOKEN is too weak: use at least 16 characters"},
		{map[string]string{"USERSYNC_HTTP_ADDR": "0.0.0.0:9090", "USERSYNC_HTTP_BASIC_AUTH": "admin:s3cr3t"}, "USERSYNC_HTTP_BASIC_AUTH's password is too weak"},
		{map[string]string{"USERSYNC_HTTP_HOSTS": "https://jobs.example:9090"}, "USERSYNC_HTTP_HOSTS must be host names separated by commas"},
	} {
		tt.env["DATABASE_URL"] = "postgres://usersync@192.0.2.1:1/none?sslmode=disable&connect_timeout=1"
		code, _, errs := run(t, tt.env, "worker")
		if code != ExitUsage || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", tt.env, code, errs)
		}
		if strings.Contains(errs, "s3cr3t") {
			t.Errorf("the error echoes the password: %q", errs)
		}
	}
}

// TestLockWaitIsNotAFailure: a scheduled sync that finds the sync lock held
// (a long backfill) snoozes: /metrics counts it a lock wait, neither a run
// nor a failure, and sync_runs and status show no failure;
// it runs once the lock is free.
func TestLockWaitIsNotAFailure(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 18, Users: 300})
	ctx := context.Background()
	lock, err := c.store.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lock.Release) // before the pool closes, which waits for the lock's connection
	addr := freeAddr(t)
	startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_HTTP_ADDR": addr}))
	sch := `schema="` + c.store.Schema() + `"`
	metrics := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return "" // not listening yet
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	waitFor(t, "a sync to snooze on the held lock", 60*time.Second, func() bool {
		m := metrics()
		return strings.Contains(m, `usersync_lock_waits_total{account="default",kind="incremental",`+sch+`} `) &&
			!strings.Contains(m, `usersync_lock_waits_total{account="default",kind="incremental",`+sch+`} 0`)
	})
	lock.Release()
	waitFor(t, "a sync once the lock is free", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`) >= 1
	})
	for _, status := range []string{"failed", "snoozed"} {
		if m := metrics(); strings.Contains(m, `usersync_runs_total{account="default",kind="incremental",`+sch+`,status="`+status+`"}`) {
			t.Errorf("a lock wait was counted as a %s run:\n%s", status, grepLines(m, "usersync_r"))
		}
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'failed'`); n != 0 {
		t.Errorf("%d failed runs recorded", n)
	}
	if _, out, _ := run(t, c.env, "status"); strings.Contains(out, "failed") {
		t.Errorf("status shows a failure:\n%s", out)
	}
}

// TestRestartsAddNoWork: scheduled jobs run at a worker's start only when
// due. The first start (nothing ever ran) runs the sync and the snapshot
// (the first reconcile waits for the schedule's first tick after the first
// sync); three restarts within the hour add no sync, reconcile or snapshot.
func TestRestartsAddNoWork(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 19, Users: 200})
	// Hourly and daily schedules whose ticks lie half a period from now: the
	// test's minutes never cross one, whatever the time it runs.
	now := time.Now().UTC()
	hourly := fmt.Sprintf("%d * * * *", (now.Minute()+30)%60)
	env := workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": hourly, "USERSYNC_RECONCILE_SCHEDULE": fmt.Sprintf("0 %d * * *", (now.Hour()+12)%24),
		"USERSYNC_SNAPSHOT_SCHEDULE": hourly, "USERSYNC_SNAPSHOT_DIR": t.TempDir(), "USERSYNC_SNAPSHOT_AFTER_SYNC": "false"})
	jobsOf := func(kind string) int64 {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = '`+kind+`'`)
	}
	kinds := []string{"usersync_sync", "usersync_reconcile", "usersync_snapshot"}
	w := startWorker(t, env)
	waitFor(t, "the first start's jobs to complete", 90*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $river.river_job WHERE state = 'completed' AND kind = 'usersync_sync'`) >= 1 &&
			c.query(t, `SELECT count(*) FROM $river.river_job WHERE state = 'completed' AND kind = 'usersync_snapshot'`) >= 1
	})
	w.stop(t)
	// A snapshot skipped beside the first sync is enqueued again by its
	// success: the first start may leave two snapshot jobs.
	want := map[string]int64{}
	for _, kind := range kinds {
		want[kind] = jobsOf(kind)
	}
	for i := range 3 {
		ticks := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_due' AND state = 'completed'`)
		w := startWorker(t, env)
		// The fleet's tick decides for every account, the environment's
		// too: two ticks after the start, nothing was due.
		waitFor(t, "the restarted worker's ticks", 60*time.Second, func() bool {
			return c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_due' AND state = 'completed'`) >= ticks+2
		})
		w.stop(t)
		for _, kind := range kinds {
			if n := jobsOf(kind); n != want[kind] || n > 2 {
				t.Errorf("restart %d: %d %s jobs, want %d, as after the first start", i+1, n, kind, want[kind])
			}
		}
	}
}

// TestWorkerStaysFlat: a worker lives for weeks and runs thousands of jobs
// in one process. Once its first runs are done, more runs (syncs with
// changes, snapshots after them, reconciles, scrapes of /metrics) leave
// no goroutine and no live heap behind. Not parallel: the package's
// parallel tests stay paused while it counts the process's goroutines.
func TestWorkerStaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	c := newCLIEnv(t, apisim.Options{Seed: 20, Users: 600})
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_FLEET_TICK": "1s",
		"USERSYNC_RECONCILE_SCHEDULE": "@every 4s", "USERSYNC_SNAPSHOT_DIR": t.TempDir(),
		"USERSYNC_SNAPSHOT_AFTER_SYNC": "true", "USERSYNC_HTTP_ADDR": addr}))
	type footprint struct {
		goroutines int
		heap       uint64
	}
	// busy is -1 while a job runs, else when the last one started (µs):
	// two equal looks mean no job ran between them.
	busy := func() int64 {
		return c.query(t, `SELECT CASE WHEN bool_or(state = 'running') THEN -1
			ELSE coalesce((extract(epoch FROM max(attempted_at)) * 1e6)::bigint, 0) END FROM $river.river_job`)
	}
	// idle measures the process between two looks at the queue that find
	// no job running and none started in between: the goroutines and the
	// live heap after a collection.
	idle := func() (footprint, bool) {
		before := busy()
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		f := footprint{goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
		return f, before >= 0 && busy() == before
	}
	// after waits for n runs and snapshots to have succeeded, changes some
	// users for the next runs, and measures the process in three idle
	// moments (the fewest goroutines, the least heap).
	after := func(n int64) footprint {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d runs and snapshots", n), 2*time.Minute, func() bool {
			return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`) >= n &&
				c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_snapshot' AND state = 'completed'`) >= n/2
		})
		c.sim.UpdateUsers(30)
		if code, _ := get(t, "http://"+addr+"/metrics", ""); code != http.StatusOK {
			t.Fatalf("/metrics: %d", code)
		}
		least := footprint{goroutines: math.MaxInt, heap: math.MaxUint64}
		seen := 0
		waitFor(t, "three idle moments", time.Minute, func() bool {
			if f, ok := idle(); ok {
				least.goroutines, least.heap = min(least.goroutines, f.goroutines), min(least.heap, f.heap)
				seen++
			}
			return seen == 3
		})
		return least
	}
	first := after(6)
	last := after(36)
	t.Logf("after 6 runs: %d goroutines, %d KiB live heap; after 36: %d goroutines, %d KiB",
		first.goroutines, first.heap>>10, last.goroutines, last.heap>>10)
	if last.goroutines > first.goroutines+3 {
		t.Errorf("30 more runs left %d goroutines more (%d, then %d)", last.goroutines-first.goroutines, first.goroutines, last.goroutines)
	}
	if last.heap > first.heap+4<<20 {
		t.Errorf("30 more runs left %d KiB more live heap (%d KiB, then %d KiB)", (last.heap-first.heap)>>10, first.heap>>10, last.heap>>10)
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestJobUIRefusesDNSRebinding: a worker serving the job UI unguarded on
// 127.0.0.1 (the default) refuses a page whose name was rebound to
// 127.0.0.1: with Host and Origin both that name it can neither list jobs
// nor cancel one, which stays available; localhost still can.
func TestJobUIRefusesDNSRebinding(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 37, Users: 50})
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_HTTP_ADDR": addr}))
	waitFor(t, "the job UI", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	// A job the worker will not run for an hour, to cancel.
	var id int64
	if err := c.store.Pool().QueryRow(context.Background(), fmt.Sprintf(`INSERT INTO %q.river_job (kind, args, queue, state, scheduled_at, max_attempts)
		VALUES ('usersync_sync', '{}', 'default', 'scheduled', now() + interval '1 hour', 1) RETURNING id`, c.store.Schema()+"_river")).Scan(&id); err != nil {
		t.Fatal(err)
	}
	do := func(method, path, host, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const evil = "rebind.attacker.example"
	_, port, _ := net.SplitHostPort(addr)
	cancelBody := fmt.Sprintf(`{"ids":["%d"]}`, id)
	if code, body := do(http.MethodGet, "/riverui/api/jobs?state=scheduled&limit=20", evil+":"+port, ""); code != http.StatusMisdirectedRequest || strings.Contains(body, "usersync_sync") {
		t.Errorf("listing jobs from a rebound name: %d %.200s", code, body)
	}
	if code, body := do(http.MethodPost, "/riverui/api/jobs/cancel", evil+":"+port, cancelBody); code != http.StatusMisdirectedRequest {
		t.Errorf("cancelling a job from a rebound name: %d %.200s", code, body)
	}
	if n := c.query(t, fmt.Sprintf(`SELECT count(*) FROM $river.river_job WHERE id = %d AND state = 'scheduled'`, id)); n != 1 {
		t.Error("a rebound name cancelled the job")
	}
	// The same requests from localhost are served: the refusal is the Host's.
	if code, body := do(http.MethodGet, "/riverui/api/jobs?state=scheduled&limit=20", "localhost:"+port, ""); code != 200 || !strings.Contains(body, "usersync_sync") {
		t.Errorf("listing jobs from localhost: %d %.200s", code, body)
	}
	if code, body := do(http.MethodPost, "/riverui/api/jobs/cancel", "localhost:"+port, cancelBody); code != 200 {
		t.Errorf("cancelling a job from localhost: %d %.200s", code, body)
	}
	if n := c.query(t, fmt.Sprintf(`SELECT count(*) FROM $river.river_job WHERE id = %d AND state = 'cancelled'`, id)); n != 1 {
		t.Error("localhost did not cancel the job")
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestJobUISlowsWrongTokens: a worker's job UI answers 429 after ten wrong
// tokens, even to the right one, until the tries slow down.
func TestJobUISlowsWrongTokens(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 38, Users: 10})
	addr := freeAddr(t)
	const token = "ui-secret-0123456789"
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_HTTP_ADDR": addr, "USERSYNC_HTTP_TOKEN": token}))
	waitFor(t, "the job UI", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz") // the job UI is mounted once the worker works
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	// Wrong tokens until the first 429: about ten are refused first (one
	// more for each second the tries took, as the bucket refills).
	started, refused := time.Now(), 0
	for {
		code, _ := get(t, "http://"+addr+"/riverui/", fmt.Sprintf("guess-%03d", refused))
		if code == http.StatusTooManyRequests {
			break
		}
		if code != http.StatusUnauthorized {
			t.Fatalf("wrong token: %d", code)
		}
		if refused++; refused > 100 {
			t.Fatal("100 wrong tokens and still no 429")
		}
	}
	if most := 10 + int(time.Since(started).Seconds()) + 1; refused < 10 || refused > most {
		t.Errorf("%d wrong tokens were refused before the throttle, want 10 to %d", refused, most)
	}
	if code, _ := get(t, "http://"+addr+"/riverui/", token); code != http.StatusTooManyRequests {
		t.Errorf("the right token while throttled: %d", code)
	}
	time.Sleep(1100 * time.Millisecond)
	if code, _ := get(t, "http://"+addr+"/riverui/", token); code != 200 {
		t.Errorf("the right token a second later: %d", code)
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestJobUIAnswersConfiguredHosts: USERSYNC_HTTP_HOSTS reaches the job UI:
// a name listed there is served (a proxy's), any other still is not.
func TestJobUIAnswersConfiguredHosts(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 39, Users: 10})
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_HTTP_ADDR": addr, "USERSYNC_HTTP_HOSTS": "jobs.internal, proxy.example"}))
	waitFor(t, "the job UI", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz") // the job UI is mounted once the worker works
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	for host, want := range map[string]int{"jobs.internal:" + port: 200, "Proxy.Example": 200, "rebind.attacker.example:" + port: http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/riverui/api/jobs?state=completed&limit=5", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}
