package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

// TestWorkerWaitsForLogin: a worker with OAuth configured and no refresh
// token stored yet starts and works instead of exiting 2 (a pod would
// crash-loop until the login): it logs once, at ERROR, the command to run,
// its start check names it, /healthz (200) says what it waits for, and its
// sync jobs wait, each failed run saying the command; once usersync auth
// login stored a token, the jobs run and /healthz is plain again.
func TestWorkerWaitsForLogin(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 43, Users: 60, TokenTTL: time.Hour}, nil)
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(a.cliEnv, mergeEnv(a.oauth, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s",
		"USERSYNC_HTTP_ADDR": addr})))
	healthz := func() string {
		select {
		case code := <-w.done:
			w.done <- code
			t.Fatalf("the worker exited %d before the login", code)
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return "" // not listening yet
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz answered %d: %s", resp.StatusCode, b)
		}
		return string(b)
	}
	waitFor(t, "/healthz to say the worker waits for the login", 30*time.Second, func() bool {
		return healthz() == "ok: no OAuth refresh token is stored for account default: its jobs wait until usersync auth login stores one\n"
	})
	startCheckSays(t, w, "token", "run usersync auth login with the worker's settings")
	waitFor(t, "a sync job's run to say what to run", 30*time.Second, func() bool {
		return a.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'failed' AND job_id IS NOT NULL
			AND error LIKE '%no OAuth refresh token is stored yet%run usersync auth login%'`) >= 1
	})
	if n := strings.Count(w.logs.String(), "OAuth is configured but no refresh token is stored for the account"); n != 1 {
		t.Errorf("the worker said %d times that it waits for the login, want once", n)
	}
	if a.query(t, `SELECT count(*) FROM $river.river_job WHERE kind = 'usersync_sync' AND state IN ('cancelled', 'discarded')`) != 0 {
		t.Error("a sync job waiting for the login was given up")
	}

	if code, out, errs := a.login(t); code != ExitOK {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errs)
	}
	waitFor(t, "a worker sync after the login", 60*time.Second, func() bool {
		return a.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded' AND job_id IS NOT NULL`) >= 1
	})
	syncertest.AssertMirrors(t, a.sim, a.store)
	waitFor(t, "/healthz to be plain again", 10*time.Second, func() bool { return healthz() == "ok\n" })
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestWorkerWaitsForAnAccountsLogin: a registered account with OAuth and no
// token stored waits alone: the worker names it and its login (usersync auth
// login --account NAME) in its log and on /healthz, the default account's
// syncs run meanwhile, and once the account's login is done its jobs run.
func TestWorkerWaitsForAnAccountsLogin(t *testing.T) {
	t.Parallel()
	f := newOAuthAccountFleet(t)
	f.env["USERSYNC_SCHEDULE_MIN_INTERVAL"] = "1s"
	f.mustRun(t, "accounts", "set", "oa", "--sync-schedule", "@every 1s")
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(f.cliEnv, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_FLEET_TICK": "1s",
		"USERSYNC_HTTP_ADDR": addr, "USERSYNC_SNAPSHOT_DIR": "off"}))
	oaSchema := f.accountSchema(t, "oa")
	waitFor(t, "/healthz to name the account waiting for its login", 60*time.Second, func() bool {
		_, body := getQuiet("http://" + addr + "/healthz")
		return body == "ok: no OAuth refresh token is stored for account oa: its jobs wait until usersync auth login --account oa stores one\n"
	})
	waitFor(t, "a sync of the default account meanwhile", 30*time.Second, func() bool {
		return f.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded' AND job_id IS NOT NULL`) >= 1
	})
	var told []string
	for _, l := range strings.Split(w.logs.String(), "\n") {
		if strings.Contains(l, "OAuth is configured but no refresh token is stored for the account") {
			told = append(told, l)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], `"account":"oa"`) || !strings.Contains(told[0], `"action":"usersync auth login --account oa`) {
		t.Errorf("the worker's lines on the awaited login, want one naming oa and its login:\n%s", strings.Join(told, "\n"))
	}

	if code, _, errs := run(t, f.env, "auth", "login", "--account", "oa", "--follow-redirect", "--redirect-port", "0"); code != ExitOK {
		t.Fatalf("auth login --account oa: exit %d: %s", code, errs)
	}
	waitFor(t, "a sync of account oa after its login", 60*time.Second, func() bool {
		return f.count(t, `SELECT count(*) FROM "`+oaSchema+`".sync_runs WHERE status = 'succeeded' AND job_id IS NOT NULL`) >= 1
	})
	waitFor(t, "/healthz to be plain again", 10*time.Second, func() bool {
		_, body := getQuiet("http://" + addr + "/healthz")
		return body == "ok\n"
	})
}

// getQuiet is get that reports a failed request as status 0, for a server
// that may not listen yet.
func getQuiet(url string) (int, string) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a test's loopback server
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// accountSchema is the schema of registered account name.
func (f *registryFleet) accountSchema(t *testing.T, name string) string {
	t.Helper()
	var s string
	if err := f.pool.QueryRow(context.Background(), `SELECT settings->>'USERSYNC_SCHEMA' FROM "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts
		WHERE name = $1`, name).Scan(&s); err != nil || s == "" {
		t.Fatalf("the schema of account %s: %q, %v", name, s, err)
	}
	return s
}
