package cli

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// readOnlyRole makes a login role whose sessions are read-only (a full
// disk's stand-in that touches no other test) and returns c's DATABASE_URL
// as that role, and a function that makes it writable again and ends its
// sessions so that the worker's pool reconnects writable.
func readOnlyRole(t *testing.T, c *cliEnv) (string, func()) {
	t.Helper()
	ctx := context.Background()
	role := c.store.Schema() + "_ro"
	pool := c.store.Pool()
	if _, err := pool.Exec(ctx, `CREATE ROLE "`+role+`" LOGIN SUPERUSER; ALTER ROLE "`+role+`" SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
		_, _ = pool.Exec(context.Background(), `DROP ROLE IF EXISTS "`+role+`"`)
	})
	u, err := url.Parse(c.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String(), func() {
		if _, err := pool.Exec(ctx, `ALTER ROLE "`+role+`" RESET default_transaction_read_only`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkerWaitsWhileWritesRefused: a worker started against a warehouse
// that answers but refuses writes does not exit: /readyz is 503 saying the
// database refuses writes, /metrics has usersync_database_up 1 (it is not
// down) and usersync_database_writable 0 (what UsersyncDatabaseRefusesWrites
// alerts on), and once writes are taken again it starts and syncs without a
// restart.
func TestWorkerWaitsWhileWritesRefused(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 43, Users: 80})
	dsn, writable := readOnlyRole(t, c)
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(c, map[string]string{"DATABASE_URL": dsn, "USERSYNC_HTTP_ADDR": addr,
		"USERSYNC_SYNC_SCHEDULE": "@every 2s"}))
	base := "http://" + addr
	waitFor(t, "/readyz to say the database refuses writes", 30*time.Second, func() bool {
		select {
		case code := <-w.done:
			w.done <- code
			t.Fatalf("the worker exited %d while its database refused writes", code)
		default:
		}
		if statusOf(base+"/readyz") != http.StatusServiceUnavailable {
			return false
		}
		_, body := get(t, base+"/readyz", "")
		return strings.Contains(body, "refuses writes (read-only")
	})
	schemaLabel := `{schema="` + c.store.Schema() + `"}`
	if _, metrics := get(t, base+"/metrics", ""); !strings.Contains(metrics, "\nusersync_database_up"+schemaLabel+" 1\n") ||
		!strings.Contains(metrics, "\nusersync_database_writable"+schemaLabel+" 0\n") {
		t.Errorf("/metrics while writes are refused:\n%s", grepLines(metrics, "usersync_database"))
	}
	if !strings.Contains(w.logs.String(), "default_transaction_read_only") {
		t.Errorf("the worker's log does not say what to check:\n%s", w.logs.String())
	}

	writable()
	waitFor(t, "/readyz once writes are taken", 60*time.Second, func() bool { return statusOf(base+"/readyz") == http.StatusOK })
	waitFor(t, "a scheduled sync", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`) >= 1
	})
	if _, metrics := get(t, base+"/metrics", ""); !strings.Contains(metrics, "\nusersync_database_writable"+schemaLabel+" 1\n") {
		t.Errorf("/metrics once writable:\n%s", grepLines(metrics, "usersync_database"))
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestTableLockIsALockWait: a session holding a warehouse table makes no
// usersync statement wait past USERSYNC_LOCK_TIMEOUT (the run fails and the
// next one resumes), shows as usersync_database_lock_wait_seconds while
// usersync_database_up stays 1 and /readyz ready, and syncs succeed again
// once the lock is released.
func TestTableLockIsALockWait(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 44, Users: 80})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync --full: %s", errs)
	}
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_HTTP_ADDR": addr, "USERSYNC_SYNC_SCHEDULE": "@every 1s",
		"USERSYNC_LOCK_TIMEOUT": "3s"}))
	base := "http://" + addr
	waitFor(t, "/readyz", 30*time.Second, func() bool { return statusOf(base+"/readyz") == http.StatusOK })

	ctx := context.Background()
	tx, err := c.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE "`+c.store.Schema()+`".sync_state IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	waitFor(t, "a run failed on the lock timeout", 60*time.Second, func() bool {
		return strings.Contains(w.logs.String(), "canceling statement due to lock timeout")
	})
	// A command waits as long, no longer, and its wait shows in the worker's
	// /metrics meanwhile, with the database up and the worker ready.
	status := make(chan string, 1)
	began := time.Now()
	env := workerEnv(c, map[string]string{"USERSYNC_LOCK_TIMEOUT": "3s"})
	go func() { _, _, errs := run(t, env, "status"); status <- errs }()
	time.Sleep(time.Second)
	_, metrics := get(t, base+"/metrics", "")
	m := regexp.MustCompile(`\nusersync_database_lock_wait_seconds\{schema="[^"]+"\} ([0-9.e+-]+)\n`).FindStringSubmatch(metrics)
	if m == nil {
		t.Errorf("no usersync_database_lock_wait_seconds in /metrics:\n%s", grepLines(metrics, "usersync_database"))
	} else if v, _ := strconv.ParseFloat(m[1], 64); v < 0.5 {
		t.Errorf("usersync_database_lock_wait_seconds = %v while usersync status waits for the lock", v)
	}
	if !strings.Contains(metrics, "\nusersync_database_up{schema=\""+c.store.Schema()+"\"} 1\n") {
		t.Errorf("usersync_database_up is not 1 during a table lock:\n%s", grepLines(metrics, "usersync_database"))
	}
	if code := statusOf(base + "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz during a table lock: %d", code)
	}
	if errs := <-status; !strings.Contains(errs, "lock timeout") {
		t.Errorf("usersync status during a table lock: %q, want the lock timeout", errs)
	}
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("usersync status waited %s for the lock, past USERSYNC_LOCK_TIMEOUT 3s", d)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	waitFor(t, "a sync after the lock is released", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded' AND started_at > $1`, released) >= 1
	})
	t.Logf("locked for %s", released.Sub(locked).Round(time.Second))
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// statusOf is the status code of a GET of url, 0 when it got no answer.
func statusOf(url string) int {
	resp, err := http.Get(url) //nolint:gosec,noctx // a test's loopback URL
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestNoReconcileBeforeTheFirstSync: a worker's first start on an empty
// warehouse, with a reconcile due at once, reconciles nothing before its
// first sync completed: the first sync (a backfill) fetches every user
// anyway.
func TestNoReconcileBeforeTheFirstSync(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 45, Users: 300, Knobs: apisim.Knobs{PageSizeCap: 50, Latency: 100 * time.Millisecond}})
	w := startWorker(t, workerEnv(c, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1h", "USERSYNC_RECONCILE_SCHEDULE": "@every 1s"}))
	waitFor(t, "a reconcile after the first sync", 90*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE kind = 'reconcile'`) >= 1
	})
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs r WHERE kind = 'reconcile' AND started_at <
		(SELECT min(finished_at) FROM $schema.sync_runs WHERE kind <> 'reconcile' AND status = 'succeeded')`); n != 0 {
		t.Errorf("%d reconciles started before the first sync completed", n)
	}
	// The fleet's tick waits for the first sync before it inserts the
	// first reconcile, for the default account as for a registered one.
	if n := c.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_reconcile' AND created_at <
		(SELECT min(finished_at) FROM $schema.sync_runs WHERE kind <> 'reconcile' AND status = 'succeeded')`); n != 0 {
		t.Errorf("%d reconcile jobs inserted before the first sync completed", n)
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestReplacedTokenFileNeedsNoRestart: the default account's token, given
// in USERSYNC_API_TOKEN_FILE, is revoked by the API; once the file holds the
// new token, usersync check passes and the worker's next sync succeeds,
// without a restart.
func TestReplacedTokenFileNeedsNoRestart(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 46, Users: 40, Token: "old-token-0123456789", Knobs: apisim.Knobs{RateLimit: 100_000}})
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("old-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := workerEnv(c, map[string]string{"USERSYNC_API_TOKEN": "", "USERSYNC_API_TOKEN_FILE": path, "USERSYNC_SYNC_SCHEDULE": "@every 1s"})
	w := startWorker(t, env)
	succeeded := func() int64 {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`)
	}
	waitFor(t, "a first sync", 60*time.Second, func() bool { return succeeded() >= 1 })
	c.sim.ReplaceToken("new-token-0123456789") // the old one is revoked
	waitFor(t, "a sync refused with 401", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'failed' AND error LIKE '%401%'`) >= 1
	})
	if err := os.WriteFile(path, []byte("new-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, env, "check"); code != ExitOK {
		t.Errorf("check with the new token: exit %d\n%s%s", code, out, errs)
	}
	before := succeeded()
	waitFor(t, "a sync with the new token, without a restart", 60*time.Second, func() bool { return succeeded() > before })
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}
