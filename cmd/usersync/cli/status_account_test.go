package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
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

// TestStatusSummarisesEveryAccount: plain status ends with one line per
// account, the default's included, each with its state: ok, paused,
// credentials refused (an API that revoked the token), never synced.
func TestStatusSummarisesEveryAccount(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	f.mustRun(t, "sync", "--full")
	add := func(name string) *apisim.Server {
		sim, url := f.simulator(t, 7, 10)
		f.mustRun(t, "accounts", "add", name, "--api-url", url, "--schema", schematest.NewSchemaName(t, f.pool),
			"--api-token-file", f.secretFile(t, name+".token", name+"-token-0123456789"))
		return sim
	}
	add("eu")
	add("ap")
	rv := add("rv")
	add("nw")
	f.mustRun(t, "sync", "--account", "eu")
	f.mustRun(t, "accounts", "pause", "ap")
	rv.RevokeTokens()
	if code, _, _ := run(t, f.env, "sync", "--account", "rv"); code == ExitOK {
		t.Fatal("a sync against a revoked token succeeded")
	}
	var st struct {
		Accounts []registry.Status `json:"accounts"`
	}
	out := f.mustRun(t, "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	want := map[string]string{jobs.DefaultAccount: "ok", "eu": "ok", "ap": "paused", "rv": "credentials refused (HTTP 401)", "nw": "never synced"}
	got := map[string]string{}
	for _, a := range st.Accounts {
		got[a.Name] = a.State
	}
	if len(got) != len(want) || st.Accounts[0].Name != jobs.DefaultAccount {
		t.Errorf("status --json accounts: %+v, want the default first and %v", st.Accounts, want)
	}
	for name, state := range want {
		if got[name] != state {
			t.Errorf("account %s: state %q, want %q", name, got[name], state)
		}
	}
	text := f.mustRun(t, "status")
	for name, state := range want {
		if !regexp.MustCompile(`(?m)^  ` + name + ` +` + regexp.QuoteMeta(state) + `  `).MatchString(text) {
			t.Errorf("status has no line for %s in state %q:\n%s", name, state, text)
		}
	}
}
