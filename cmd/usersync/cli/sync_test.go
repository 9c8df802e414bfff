package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

type cliEnv struct {
	sim   *apisim.Server
	srv   *httptest.Server
	env   map[string]string
	store *warehouse.Store
}

// newCLIEnv starts a simulator and migrates a fresh schema through the CLI.
func newCLIEnv(t *testing.T, opts apisim.Options) *cliEnv {
	t.Helper()
	sim := apisim.New(opts)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	env := map[string]string{
		"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "",
		"USERSYNC_API_URL": srv.URL, "USERSYNC_API_TOKEN": "cli-test-token",
	}
	if code, _, errs := run(t, env, "migrate"); code != ExitOK {
		t.Fatalf("migrate: %s", errs)
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return &cliEnv{sim: sim, srv: srv, env: env, store: store}
}

func TestSyncAndStatusCommands(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 3, Users: 1500, Knobs: apisim.Knobs{SchemaDrift: true}})
	code, out, errs := run(t, c.env, "sync", "--full")
	if code != ExitOK {
		t.Fatalf("sync --full: exit %d: %s", code, errs)
	}
	for _, want := range []string{"full run 1 finished", "1500 received: 1500 inserted", "teams", "drift", "watermark"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	syncertest.AssertMirrors(t, c.sim, c.store)

	c.sim.UpdateUsers(7)
	code, out, errs = run(t, c.env, "sync", "--json")
	if code != ExitOK {
		t.Fatalf("sync: exit %d: %s", code, errs)
	}
	var sum syncer.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("sync --json: %v\n%s", err, out)
	}
	if sum.Kind != warehouse.KindIncremental || sum.Updated != 7 || sum.Watermark == nil {
		t.Errorf("incremental summary: %+v", sum)
	}

	code, out, errs = run(t, c.env, "status")
	if code != ExitOK {
		t.Fatalf("status: %s", errs)
	}
	for _, want := range []string{"watermark", "behind now", "quarantine   0 unresolved", "incremental  succeeded", "full         succeeded", "drift"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, c.env, "status", "--json")
	var st map[string]any
	if code != ExitOK || json.Unmarshal([]byte(out), &st) != nil || st["watermark_lag_seconds"] == nil {
		t.Errorf("status --json: %d %s", code, out)
	}
	if strings.Contains(out, "cli-test-token") {
		t.Error("status prints the API token")
	}
}

func TestSyncFlagsAndStrict(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 4, Users: 400, Knobs: apisim.Knobs{WrongTypeRate: 0.05}})
	if code, _, errs := run(t, c.env, "sync", "--full", "--since", "2024-01-01"); code != ExitUsage || !strings.Contains(errs, "--full") {
		t.Errorf("--full with --since: %d %s", code, errs)
	}
	if code, _, errs := run(t, c.env, "sync", "--since", "last week"); code != ExitUsage || !strings.Contains(errs, "--since must be") {
		t.Errorf("bad --since: %d %s", code, errs)
	}
	code, out, errs := run(t, c.env, "sync", "--full", "--strict")
	if code != ExitQuarantined || !strings.Contains(errs, "quarantined (--strict)") || !strings.Contains(out, "quarantined") {
		t.Errorf("--strict with quarantined users: exit %d\n%s\n%s", code, out, errs)
	}
	// A backfill of a closed range does not move the watermark backwards.
	code, out, errs = run(t, c.env, "sync", "--since", "2000-01-01", "--until", "2001-01-01", "--json")
	if code != ExitOK {
		t.Fatalf("backfill: %s", errs)
	}
	var sum syncer.Summary
	_ = json.Unmarshal([]byte(out), &sum)
	if sum.Kind != warehouse.KindBackfill || sum.Fetched != 0 {
		t.Errorf("backfill of an empty range: %+v", sum)
	}
}

func TestSyncNeedsMigration(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 2)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": schematest.NewSchemaName(t, pool),
		"USERSYNC_API_URL": "http://127.0.0.1:1", "USERSYNC_API_TOKEN": "x"}
	if code, _, errs := run(t, env, "sync"); code != ExitFailure || !strings.Contains(errs, "run usersync migrate first") {
		t.Errorf("sync before migrate: %d %s", code, errs)
	}
}

// TestSimulateStopsOnSignal starts `usersync simulate` as a process, waits
// for it to log its address, serves a request, and stops it with SIGTERM.
func TestSimulateStopsOnSignal(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "simulate", "--addr", "127.0.0.1:0", "--users", "50", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	var url string
	for lines.Scan() {
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["msg"] == "simulated API listening" {
			url, _ = rec["url"].(string)
			break
		}
	}
	if url == "" {
		t.Fatal("simulate did not log its address")
	}
	env := map[string]string{"USERSYNC_API_URL": url, "USERSYNC_API_TOKEN": "x"}
	cfg, _ := configFor(env)
	client, err := newAPIClient(context.Background(), env0{cfg}.env(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(context.Background(), "teams", queryFirstPage()); err != nil {
		t.Fatalf("GET teams from the simulator: %v", err)
	}
	// As the service, it sends its budget (usersync check and the worker's
	// start check fail on an API that does not).
	if rl := client.Stats().RateLimit; rl.Limit != jsonapi.DefaultRateLimit || rl.Remaining <= 0 {
		t.Errorf("simulate's default rate limit reads %+v, want a limit of %d", rl, jsonapi.DefaultRateLimit)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("simulate exited with %v after SIGTERM", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("simulate did not stop within 10s of SIGTERM")
	}
}

// TestKillMidSyncResumes kills a `usersync sync --full` process with SIGKILL
// mid-run, then syncs again, with --full or a plain sync (no watermark exists
// yet, so it is the same walk): nothing is lost or duplicated, and the second
// run resumes from the checkpoint, fetching far fewer pages than a fresh one.
func TestKillMidSyncResumes(t *testing.T) {
	t.Parallel()
	for name, again := range map[string][]string{"full": {"sync", "--full", "--json"}, "plain": {"sync", "--json"}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			killMidSyncThenResume(t, again)
		})
	}
}

func killMidSyncThenResume(t *testing.T, again []string) {
	c := newCLIEnv(t, apisim.Options{Seed: 5, Users: 6000, Knobs: apisim.Knobs{Latency: 15 * time.Millisecond}})
	env := c.env
	env["USERSYNC_PAGE_SIZE"] = "100" // 60 pages
	cmd := exec.Command(binary(t), "sync", "--full")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	var pages int64
	for time.Now().Before(deadline) {
		_ = c.store.Pool().QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(pages), 0) FROM %q.sync_runs`, c.store.Schema())).Scan(&pages)
		if pages >= 25 {
			break
		}
		<-time.After(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if pages < 25 || pages >= 60 {
		t.Fatalf("killed at %d pages; want between 25 and 60", pages)
	}
	code, out, errs := run(t, env, again...)
	if code != ExitOK {
		t.Fatalf("resumed sync: %s", errs)
	}
	var sum syncer.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.Resumed || sum.Kind != warehouse.KindFull {
		t.Errorf("second run: resumed %v, kind %s; want the killed full run resumed", sum.Resumed, sum.Kind)
	}
	// The resumed run's counters include the killed process's pages; this
	// process fetched the rest only.
	if users := c.sim.Stats().ByEndpoint["GET /api/v2/users"]; users > 60+int64(pages)+5 {
		t.Errorf("users pages fetched in all: %d; a resume should add about %d to the %d before the kill", users, 60-pages, pages)
	}
	if sum.Pages != 60 || sum.Fetched != 6000 {
		t.Errorf("resumed run counters: pages %d fetched %d, want 60 and 6000", sum.Pages, sum.Fetched)
	}
	syncertest.AssertMirrors(t, c.sim, c.store)
	var dupes int64
	_ = c.store.Pool().QueryRow(ctx, fmt.Sprintf(`SELECT count(*) - count(DISTINCT user_id) FROM %q.user_versions`, c.store.Schema())).Scan(&dupes)
	if dupes != 0 {
		t.Errorf("%d duplicate versions after the resume", dupes)
	}
}
