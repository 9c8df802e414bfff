package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema/schematest"
)

// TestStatusCountsTheAccountsJobs: status --account NAME counts the jobs of
// that account only, and status (the default account's) those whose
// arguments name no account, with two accounts' jobs in River.
func TestStatusCountsTheAccountsJobs(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, euURL := f.simulator(t, 5, 20)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", schematest.NewSchemaName(t, f.pool),
		"--api-token-file", f.secretFile(t, "eu.token", "eu-token-0123456789"))
	// No worker runs: the jobs stay available.
	f.mustRun(t, "backfill", "--account", "eu")
	f.mustRun(t, "backfill", "--account", "eu", "--since", "2020-01-01")
	f.mustRun(t, "backfill", "--account", "eu", "--since", "2021-01-01")
	f.mustRun(t, "backfill", "--since", "2022-01-01")

	for _, c := range []struct {
		args []string
		want int64
	}{{[]string{"status", "--json"}, 1}, {[]string{"status", "--account", "default", "--json"}, 1}, {[]string{"status", "--account", "eu", "--json"}, 3}} {
		var st struct {
			Jobs []jobs.JobCount `json:"jobs"`
		}
		out := f.mustRun(t, c.args...)
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
		var n int64
		for _, jc := range st.Jobs {
			n += jc.Count
		}
		if n != c.want || len(st.Jobs) != 1 || st.Jobs[0].Kind != jobs.KindBackfill || st.Jobs[0].State != "available" {
			t.Errorf("usersync %s: jobs %+v, want %d available backfills", strings.Join(c.args, " "), st.Jobs, c.want)
		}
	}
	if out := f.mustRun(t, "status", "--account", "eu"); !strings.Contains(out, "backfill available: 3") {
		t.Errorf("status --account eu does not count its 3 backfills:\n%s", out)
	}
	if out := f.mustRun(t, "status"); !strings.Contains(out, "backfill available: 1") {
		t.Errorf("status does not count the default account's 1 backfill:\n%s", out)
	}
}
