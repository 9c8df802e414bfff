package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
)

// TestAnalystsViewsSurvive: views an analyst built in a schema of their own
// over every table of two accounts and over every union view (and a
// materialized view over one) still answer after each command that
// changes the accounts, the union views or the tables: usersync replaces
// the union views in place and drops nothing it did not make.
func TestAnalystsViewsSurvive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRegistryFleet(t)
	f.mustRun(t, "migrate")
	fleetSchema := f.env["USERSYNC_SCHEMA"]
	union := fleetSchema + "_all"
	add := func(name string) string {
		_, url := f.simulator(t, int64(len(name)), 25)
		s := schematest.NewSchemaName(t, f.pool)
		f.mustRun(t, "accounts", "add", name, "--api-url", url, "--schema", s, "--api-token-file", f.secretFile(t, name+".token", "tok-"+name))
		return s
	}
	eu := add("eu")
	add("us")
	f.mustRun(t, "sync", "--full")
	f.mustRun(t, "sync", "--account", "eu", "--full")

	dep := schematest.NewSchemaName(t, f.pool)
	stmts := []string{`CREATE SCHEMA "` + dep + `"`,
		fmt.Sprintf(`CREATE MATERIALIZED VIEW %q.users_m AS SELECT account, count(*) AS n FROM %q.users GROUP BY account`, dep, union)}
	var views []string
	for _, tb := range schema.Tables() {
		for tag, s := range map[string]string{"d": fleetSchema, "eu": eu, "all": union} {
			if tag == "all" && !tb.Analysts {
				continue
			}
			v := fmt.Sprintf("%q.%q", dep, tag+"_"+tb.Name)
			views = append(views, v)
			stmts = append(stmts, fmt.Sprintf(`CREATE VIEW %s AS SELECT * FROM %q.%q`, v, s, tb.Name))
		}
	}
	if _, err := f.pool.Exec(ctx, strings.Join(stmts, ";\n")); err != nil {
		t.Fatal(err)
	}
	answer := func(after string) {
		t.Helper()
		for _, v := range views {
			if _, err := f.pool.Exec(ctx, `SELECT count(*) FROM `+v); err != nil {
				t.Fatalf("after %s, the analyst's view %s: %v", after, v, err)
			}
		}
		if _, err := f.pool.Exec(ctx, `REFRESH MATERIALIZED VIEW "`+dep+`".users_m`); err != nil {
			t.Fatalf("after %s, the analyst's materialized view: %v", after, err)
		}
	}
	answer("making them")
	user := f.count(t, `SELECT min(id) FROM "`+fleetSchema+`".users`)
	for _, args := range [][]string{
		{"accounts", "add", "ap"}, {"accounts", "remove", "us"}, {"accounts", "views"}, {"migrate"},
		{"sync"}, {"sync", "--account", "eu"}, {"reconcile"}, {"reconcile", "--account", "eu"},
		{"pii", "apply"}, {"pii", "apply", "--account", "eu"}, {"forget", "--user", fmt.Sprint(user)},
	} {
		if len(args) == 3 && args[1] == "add" {
			add(args[2])
		} else {
			f.mustRun(t, args...)
		}
		answer(strings.Join(args, " "))
	}
	if n := f.count(t, `SELECT count(*) FROM "`+union+`".users WHERE account = 'ap'`); n != 0 {
		t.Errorf("ap, never synced, has %d users in the union views", n)
	}
	if n := f.count(t, `SELECT count(DISTINCT account) FROM "`+union+`".users`); n != 2 {
		t.Errorf("the union views hold %d accounts' users, want default's and eu's", n)
	}
	// The last account's removal would drop the union views: it stops,
	// names what depends on them, and keeps the account.
	f.mustRun(t, "accounts", "remove", "eu")
	answer("accounts remove eu")
	code, _, errs := run(t, f.env, "accounts", "remove", "ap")
	if code == ExitOK || strings.Count(strings.TrimSpace(errs), "\n") > 0 || !strings.Contains(errs, "materialized view "+dep+".users_m") {
		t.Errorf("removing the last account under analysts' views: exit %d: %s", code, errs)
	}
	answer("a refused accounts remove ap")
	if out := f.mustRun(t, "accounts", "list"); !strings.Contains(out, "ap") {
		t.Errorf("the refused removal removed ap: %s", out)
	}
}
