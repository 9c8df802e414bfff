package cli

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// TestPausedAccountRefusesWork: a paused account's sync, backfill,
// reconcile and snapshot exit 2 with one line naming the account, since
// when it is paused and the command that resumes it, reading nothing of its
// API and writing nothing; status, check, jobs list, schema and auth status
// still work; resumed, its sync runs.
func TestPausedAccountRefusesWork(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	sim := apisim.New(apisim.Options{Seed: 5, Users: 40})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	euSchema := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", srv.URL, "--schema", euSchema,
		"--api-token-file", f.secretFile(t, "eu.token", "eu-token-0123456789"))
	f.mustRun(t, "sync", "--account", "eu", "--full")
	f.mustRun(t, "accounts", "pause", "eu")
	requests := sim.Stats().Requests
	before := f.state(t, euSchema)
	runs := f.count(t, `SELECT count(*) FROM "`+euSchema+`".sync_runs`)
	river := `"` + f.env["USERSYNC_SCHEMA"] + `_river".river_job`

	line := regexp.MustCompile(`^usersync [a-z]+: account eu is paused \(since 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ\): none of its work runs, by hand or scheduled; usersync accounts resume eu resumes it\n$`)
	for _, args := range [][]string{
		{"sync", "--account", "eu"}, {"sync", "--account", "eu", "--full"}, {"backfill", "--account", "eu"},
		{"reconcile", "--account", "eu"}, {"snapshot", "--account", "eu", "--out", filepath.Join(f.dir, "eu-snapshots")},
	} {
		code, out, errs := run(t, f.env, args...)
		if code != ExitUsage || out != "" || !line.MatchString(errs) {
			t.Errorf("usersync %s on a paused account: exit %d, stdout %q, stderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
	if got := sim.Stats().Requests; got != requests {
		t.Errorf("the refused commands sent %d API requests", got-requests)
	}
	if f.state(t, euSchema) != before || f.count(t, `SELECT count(*) FROM "`+euSchema+`".sync_runs`) != runs ||
		f.count(t, `SELECT count(*) FROM `+river+` WHERE args->>'account' = 'eu'`) != 0 {
		t.Error("a refused command changed the registry, the account's runs or the job queue")
	}

	for _, args := range [][]string{
		{"status", "--account", "eu"}, {"jobs", "list", "--account", "eu"}, {"schema", "--account", "eu"}, {"status"},
	} {
		if code, out, errs := run(t, f.env, args...); code != ExitOK || strings.Contains(out+errs, "is paused") {
			t.Errorf("usersync %s on a paused account: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
	// check and auth status report what they find (a static token has no
	// OAuth to show): they are refused for no pause.
	for _, args := range [][]string{{"check", "--account", "eu"}, {"auth", "status", "--account", "eu"}} {
		if _, out, errs := run(t, f.env, args...); strings.Contains(out+errs, "is paused") {
			t.Errorf("usersync %s refused a paused account:\n%s%s", strings.Join(args, " "), out, errs)
		}
	}
	if _, out, _ := run(t, f.env, "check", "--account", "eu"); !strings.Contains(out, "schemas "+euSchema) {
		t.Errorf("check --account eu on a paused account:\n%s", out)
	}

	f.mustRun(t, "accounts", "resume", "eu")
	if out := f.mustRun(t, "sync", "--account", "eu"); !strings.Contains(out, "incremental run") {
		t.Errorf("sync --account eu once resumed:\n%s", out)
	}
}
