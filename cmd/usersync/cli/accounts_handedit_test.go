package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// TestAccountsBesideAHandEditedRow: a registry row whose settings
// someone edited by hand into values that are not strings stops none of the
// commands that read every account. accounts list and status show it with
// its problem beside the others, migrate migrates the others and says why
// not it, show and remove still work on it, and accounts set mends it only
// when it gives every value that is not a string.
func TestAccountsBesideAHandEditedRow(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, url := f.simulator(t, 9, 20)
	tok := f.secretFile(t, "tok", "hand-edit-secret-0123456789")
	for _, name := range []string{"ap", "eu"} {
		f.mustRun(t, "accounts", "add", name, "--api-url", url, "--schema", schematest.NewSchemaName(t, f.pool), "--api-token-file", tok)
	}
	if _, err := f.pool.Exec(context.Background(), `UPDATE "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts
		SET settings = settings || '{"USERSYNC_PAGE_SIZE": 50}' WHERE name = 'eu'`); err != nil {
		t.Fatal(err)
	}
	const problem = "account eu: stored setting(s) USERSYNC_PAGE_SIZE are not strings"

	if out := f.mustRun(t, "accounts", "list"); !strings.Contains(out, "ap  ") || !strings.Contains(out, "not scheduled: "+problem) {
		t.Errorf("accounts list beside eu's broken row:\n%s", out)
	}
	var list struct {
		Accounts []struct{ Name, Problem string } `json:"accounts"`
	}
	if err := json.Unmarshal([]byte(f.mustRun(t, "accounts", "list", "--json")), &list); err != nil || len(list.Accounts) != 2 ||
		list.Accounts[0].Problem != "" || !strings.HasPrefix(list.Accounts[1].Problem, problem) {
		t.Errorf("accounts list --json: %+v, %v", list.Accounts, err)
	}
	if out := f.mustRun(t, "status"); !strings.Contains(out, "2 registered") || !strings.Contains(out, "not scheduled: "+problem) {
		t.Errorf("status beside eu's broken row:\n%s", out)
	}
	if out := f.mustRun(t, "migrate"); !strings.Contains(out, "account ap: schema") || !strings.Contains(out, "account eu: not migrated") {
		t.Errorf("migrate beside eu's broken row:\n%s", out)
	}
	if out := f.mustRun(t, "accounts", "show", "eu"); !strings.Contains(out, "problem      "+problem) {
		t.Errorf("accounts show eu:\n%s", out)
	}

	before := f.state(t)
	code, _, errs := run(t, f.env, "accounts", "set", "eu", "--sync-schedule", "@every 1h")
	if code != ExitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "must give USERSYNC_PAGE_SIZE too") {
		t.Errorf("accounts set eu without the page size: exit %d, %q; want 2 and one line naming USERSYNC_PAGE_SIZE", code, errs)
	}
	if f.state(t) != before {
		t.Error("the refused accounts set changed the registry")
	}
	f.mustRun(t, "accounts", "set", "eu", "--page-size", "50")
	if out := f.mustRun(t, "accounts", "list"); strings.Contains(out, "not scheduled") {
		t.Errorf("accounts list once eu is mended:\n%s", out)
	}
	if _, err := f.pool.Exec(context.Background(), `UPDATE "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts
		SET settings = settings || '{"USERSYNC_WORKERS": null}' WHERE name = 'ap'`); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, "accounts", "remove", "ap")
	if n := f.count(t, `SELECT count(*) FROM "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts WHERE name = 'ap'`); n != 0 {
		t.Error("accounts remove left ap's broken row")
	}
}
