package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/jobs/check"
	"github.com/usersync/usersync/sync/apisim"
)

// checkOutput is usersync check --json's output.
type checkOutput struct {
	Version int            `json:"version"`
	Checks  []check.Result `json:"checks"`
	OK      bool           `json:"ok"`
}

// runCheck runs usersync check, as lines and as JSON, and returns the exit
// code, the lines and the checks by name.
func runCheck(t *testing.T, env map[string]string) (int, string, map[string]check.Result) {
	t.Helper()
	code, out, errs := run(t, env, "check")
	jcode, jout, _ := run(t, env, "check", "--json")
	if jcode != code {
		t.Errorf("check exits %d, check --json %d", code, jcode)
	}
	var co checkOutput
	if err := json.Unmarshal([]byte(jout), &co); err != nil {
		t.Fatalf("check --json: %v\n%s", err, jout)
	}
	byName := map[string]check.Result{}
	for _, c := range co.Checks {
		byName[c.Name] = c
	}
	want := []string{"database", "migrations", "writes", "reader role", "api", "token", "budget", "snapshots", "schedules"}
	if co.Version != 1 || co.OK != (code == ExitOK) || len(co.Checks) != len(want) {
		t.Errorf("check --json: version %d, ok %v with exit %d, %d checks:\n%s", co.Version, co.OK, code, len(co.Checks), jout)
	}
	for i, name := range want {
		if i < len(co.Checks) && co.Checks[i].Name != name {
			t.Errorf("check %d is %q, want %q", i, co.Checks[i].Name, name)
		}
	}
	for _, c := range co.Checks { // the lines say what the JSON says (the budget's figures and the next runs move)
		line := c.Line() + "\n"
		if c.Name == "budget" || c.Name == "schedules" {
			line = strings.SplitAfter(line, ":")[0]
		}
		if !strings.Contains(out, line) || !c.OK && (c.Fix == "" || !strings.Contains(out, "fix: "+c.Fix+"\n")) {
			t.Errorf("check %s: the lines lack %q or its fix %q:\n%s", c.Name, c.Line(), c.Fix, out)
		}
	}
	if code != ExitOK && !strings.Contains(errs, "usersync check: ") {
		t.Errorf("a failed check says nothing on stderr: %q", errs)
	}
	return code, out, byName
}

// assertChecks checks which checks passed, and that each detail (or fix)
// holds the words given.
func assertChecks(t *testing.T, what string, got map[string]check.Result, want map[string]bool, words map[string][]string) {
	t.Helper()
	for name, ok := range want {
		if got[name].OK != ok {
			t.Errorf("%s: check %s ok=%v, want %v: %+v", what, name, got[name].OK, ok, got[name])
		}
	}
	for name, ws := range words {
		for _, w := range ws {
			if r := got[name]; !strings.Contains(r.Detail+" fix: "+r.Fix, w) {
				t.Errorf("%s: check %s lacks %q: %+v", what, name, w, r)
			}
		}
	}
}

func allChecks(ok bool) map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{"database", "migrations", "writes", "reader role", "api", "token", "budget", "snapshots", "schedules"} {
		m[n] = ok
	}
	return m
}

// TestCheckPassesAndFindsBrokenParts: against a working
// deployment every check passes (exit 0); a reader role that does not
// exist, an API without rate-limit headers and a snapshot folder under a
// regular file (which stops root too) each fail their check only, with a
// fix, and exit 1.
func TestCheckPassesAndFindsBrokenParts(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 61, Users: 20, Knobs: apisim.Knobs{RateLimit: 10000}})
	dir := t.TempDir()
	role := "usersync_check_reader"
	env := mergeEnv(c.env, map[string]string{"USERSYNC_SNAPSHOT_DIR": filepath.Join(dir, "snapshots"), "USERSYNC_READER_ROLE": role})
	if code, _, errs := run(t, env, "migrate"); code != ExitOK { // grants the reader role
		t.Fatalf("migrate: %s", errs)
	}
	code, out, got := runCheck(t, env)
	if code != ExitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	assertChecks(t, "working", got, allChecks(true), map[string][]string{"reader role": {role + " may read"},
		"budget": {"of 10000 requests left"}, "snapshots": {"wrote and removed a file in " + filepath.Join(dir, "snapshots", env["USERSYNC_SCHEMA"])},
		"schedules": {`sync "*/15 * * * *" (next `}})
	if entries, _ := os.ReadDir(filepath.Join(dir, "snapshots")); len(entries) != 0 {
		t.Errorf("check left %d entries in the snapshot folder", len(entries))
	}

	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.sim.UpdateKnobs(func(k *apisim.Knobs) { k.RateLimit = 0 }) // no rate limit, no headers
	broken := mergeEnv(env, map[string]string{"USERSYNC_READER_ROLE": "usersync_check_no_such_role", "USERSYNC_SNAPSHOT_DIR": filepath.Join(file, "snapshots")})
	code, out, got = runCheck(t, broken)
	if code != ExitFailure {
		t.Fatalf("check of a broken deployment: exit %d\n%s", code, out)
	}
	want := allChecks(true)
	want["reader role"], want["budget"], want["snapshots"] = false, false, false
	assertChecks(t, "broken", got, want, map[string][]string{"reader role": {"usersync_check_no_such_role (USERSYNC_READER_ROLE) does not exist", "fix: create it"},
		"budget": {"no readable x-ratelimit-limit"}, "snapshots": {"not a directory fix: make USERSYNC_SNAPSHOT_DIR a folder"}})
}

// TestCheckDatabaseDown: with the database's port closed the
// database check fails with what to check, the checks that need it say they
// were not checked, and those that do not (the API with a static token, the
// snapshot folder, the schedules) still run.
func TestCheckDatabaseDown(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 62, Users: 5, Knobs: apisim.Knobs{RateLimit: 100}})
	env := mergeEnv(c.env, map[string]string{"DATABASE_URL": "postgres://usersync:db-s3cret-pw@" + closedPort(t) + "/nothing?sslmode=disable&connect_timeout=5",
		"USERSYNC_READER_ROLE": "usersync_reader", "USERSYNC_SNAPSHOT_DIR": t.TempDir()})
	code, out, got := runCheck(t, env)
	if code != ExitFailure {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	want := allChecks(true)
	want["database"], want["migrations"], want["writes"], want["reader role"] = false, false, false, false
	assertChecks(t, "database down", got, want, map[string][]string{"database": {"connection refused fix: check that PostgreSQL runs"},
		"migrations": {"not checked: the database check failed"}, "reader role": {"not checked"}})
	if !strings.HasPrefix(out, "FAIL database: connecting to the database (DATABASE_URL postgres://usersync:xxxxx@127.0.0.1:") ||
		strings.Contains(out, "db-s3cret-pw") {
		t.Errorf("the first line is not the database's failure, or shows the password:\n%s", out)
	}
}

// TestCheckRevokedToken: an OAuth grant the API's
// administrator revoked fails the token check with invalid_grant and the
// remedy, usersync auth login; a revoked static token fails it too, the API
// having answered. Before, the token check shows the granted scope.
func TestCheckRevokedToken(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 63, Users: 10, TokenTTL: time.Hour, Knobs: apisim.Knobs{RateLimit: 500}},
		map[string]string{"USERSYNC_SNAPSHOT_DIR": "off"})
	if code, out, errs := a.login(t); code != ExitOK {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errs)
	}
	code, out, got := runCheck(t, a.oauth)
	if code != ExitOK {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	assertChecks(t, "logged in", got, allChecks(true), map[string][]string{"token": {"refreshed the grant", "scope users.read teams.read roles.read profiles.read (read-only)"}, "snapshots": {"off"}})

	a.sim.RevokeTokens()
	code, out, got = runCheck(t, a.oauth)
	want := allChecks(true)
	want["api"], want["token"], want["budget"] = false, false, false
	assertChecks(t, "revoked grant", got, want, map[string][]string{"token": {"400 Bad Request: invalid_grant", "fix: run usersync auth login"},
		"api": {"not checked"}, "budget": {"not checked"}})
	if code != ExitFailure {
		t.Errorf("check with a revoked grant: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "auth-test-secret") || strings.Contains(out, accessToken(t, a.cliEnv)) {
		t.Errorf("check shows a secret:\n%s", out)
	}

	static := mergeEnv(a.cliEnv.env, map[string]string{"USERSYNC_SNAPSHOT_DIR": "off"})
	code, out, got = runCheck(t, static)
	want["api"] = true
	assertChecks(t, "revoked static token", got, want, map[string][]string{"api": {"(401: it refuses the credentials)"},
		"token": {"401 Unauthorized", "fix: check USERSYNC_API_TOKEN"}})
	if code != ExitFailure {
		t.Errorf("check with a revoked static token: exit %d\n%s", code, out)
	}
}

// TestWorkerLogsTheFirstFailedCheck: a worker whose
// deployment's snapshot folder cannot be made (a file holds its name)
// starts, and logs at start the first check that fails in usersync check's
// words: the same detail and the same fix.
func TestWorkerLogsTheFirstFailedCheck(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 64, Users: 5, Knobs: apisim.Knobs{RateLimit: 1000}})
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, c.env["USERSYNC_SCHEMA"]), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := workerEnv(c, map[string]string{"USERSYNC_SNAPSHOT_DIR": root})
	_, _, got := runCheck(t, env)
	want := got["snapshots"]
	if want.OK || want.Fix == "" {
		t.Fatalf("check passes the snapshot folder under a file: %+v", want)
	}
	w := startWorker(t, env)
	var line struct {
		Level, Msg, Check, Detail, Fix string
	}
	waitFor(t, "the start check's log line", 30*time.Second, func() bool {
		for _, l := range strings.Split(w.logs.String(), "\n") {
			if json.Unmarshal([]byte(l), &line) == nil && strings.HasPrefix(line.Msg, "a start check failed") {
				return true
			}
		}
		return false
	})
	if line.Level != "ERROR" || line.Check != "snapshots" || line.Detail != want.Detail || line.Fix != want.Fix {
		t.Errorf("the worker logs %+v, usersync check says %+v", line, want)
	}
}

// startCheckFailed is the start of the worker's log line of a failed start
// check.
const startCheckFailed = `"msg":"a start check failed (as usersync check)"`

// startCheckSays waits for the worker's start check to log that check
// failed, with words in its fix.
func startCheckSays(t *testing.T, w *inProcessWorker, check, words string) {
	t.Helper()
	waitFor(t, "the start check's line on "+check, 30*time.Second, func() bool {
		for _, l := range strings.Split(w.logs.String(), "\n") {
			if strings.Contains(l, startCheckFailed+`,"check":"`+check+`"`) && strings.Contains(l, words) {
				return true
			}
		}
		return false
	})
}
