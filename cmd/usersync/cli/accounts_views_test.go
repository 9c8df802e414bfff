package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema/schematest"
)

// TestAccountsAddWithoutViews: registering many
// accounts need not remake the union views at each one (each view unites
// every account: N registrations would cost in N²). accounts add --no-views
// leaves them; accounts views remakes them once, and says when they are
// current already; and a running worker's fleet tick remakes them by itself
// once the registered accounts changed, so an analyst sees a new account
// without anybody doing anything.
func TestAccountsAddWithoutViews(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	union := f.env["USERSYNC_SCHEMA"] + "_all"
	add := func(name string) string {
		_, url := f.simulator(t, int64(len(name)), 20)
		s := schematest.NewSchemaName(t, f.pool)
		out := f.mustRun(t, "accounts", "add", name, "--api-url", url, "--schema", s, "--no-views",
			"--api-token-file", f.secretFile(t, name+".token", "tok-"+name))
		if !strings.Contains(out, "the union views were not remade (--no-views)") {
			t.Errorf("accounts add --no-views: %s", out)
		}
		return s
	}
	add("eu")
	add("us")
	if n := f.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname = '`+union+`'`); n != 0 {
		t.Fatal("accounts add --no-views made the union views")
	}
	if out := f.mustRun(t, "accounts", "views"); !strings.Contains(out, "union views in schema "+union+": remade") {
		t.Errorf("accounts views: %s", out)
	}
	if out := f.mustRun(t, "accounts", "views"); !strings.Contains(out, ": already current") {
		t.Errorf("accounts views again: %s", out)
	}
	unites := func(schema string) bool {
		// Read while a worker may be remaking the views: a view dropped
		// under the catalog's read is an error, and no answer yet.
		var n int
		err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_views WHERE schemaname = $1 AND viewname = 'users'
			AND definition LIKE '%' || $2 || '.users%'`, union, schema).Scan(&n)
		return err == nil && n == 1
	}
	ap := add("ap")
	if unites(ap) {
		t.Fatal("the views unite ap, added with --no-views")
	}
	startWorker(t, workerEnv(f.cliEnv, map[string]string{"USERSYNC_FLEET_TICK": "1s"}))
	waitFor(t, "the worker's fleet tick to remake the views with ap", 60*time.Second, func() bool { return unites(ap) })
	if out := f.mustRun(t, "accounts", "views"); !strings.Contains(out, ": already current") {
		t.Errorf("accounts views after the worker's tick: %s", out)
	}
}
