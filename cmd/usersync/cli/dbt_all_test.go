package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/schema/dbt"
	"github.com/usersync/usersync/schema/schematest"
)

// TestDBTAllAccountsFreshnessPerAccount: the union views' source holds each
// account to its own schedule (the default every quarter hour, eu hourly):
// eu's last sync 150 minutes ago is past its warning (two hours) but not its
// error (six), though past the default's error; and the union's tests, the
// (account, id) keys among them, hold. Older forms have no freshness there.
func TestDBTAllAccountsFreshnessPerAccount(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, euURL := f.simulator(t, 5, 60)
	euSchema := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", euSchema, "--sync-schedule", "@hourly",
		"--api-token-file", f.secretFile(t, "eu.token", "eu-secret-token-0123456789"))
	f.mustRun(t, "sync", "--account", "eu", "--full")
	f.mustRun(t, "sync", "--full")

	var p dbtParsed
	if err := yaml.Unmarshal([]byte(f.mustRun(t, "schema", "--format", "dbt", "--all-accounts")), &p); err != nil || len(p.Sources) != 1 {
		t.Fatalf("dbt --all-accounts: %v", err)
	}
	src := p.Sources[0]
	fresh, q := src.Config.Freshness, src.Config.LoadedAtQuery
	if fresh == nil || fresh.WarnAfter != (dbtPeriod{30, "minute"}) || fresh.ErrorAfter != (dbtPeriod{90, "minute"}) ||
		!strings.Contains(q, "('default', 1)") || !strings.Contains(q, "('eu', 0.25)") {
		t.Fatalf("dbt --all-accounts: freshness %+v from %s", fresh, q)
	}
	age := func() time.Duration {
		t.Helper()
		var loaded time.Time
		if err := f.pool.QueryRow(context.Background(), q).Scan(&loaded); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return time.Since(loaded)
	}
	if a := age(); a > 5*time.Minute {
		t.Errorf("both accounts just synced, but the union's freshness is %s old", a)
	}
	if _, err := f.pool.Exec(context.Background(), "UPDATE "+pgx.Identifier{euSchema, "sync_runs"}.Sanitize()+
		" SET finished_at = finished_at - interval '150 minutes'"); err != nil {
		t.Fatal(err)
	}
	if a := age(); a < 30*time.Minute || a > 90*time.Minute {
		t.Errorf("eu synced 150 minutes ago (hourly): the union's freshness is %s old, want past the warning (30m) and before the error (90m)", a)
	}
	checkUnionTests(t, f, src)

	for _, version := range []string{"1.8.10", "1.9.5"} {
		var old dbtParsed
		if err := yaml.Unmarshal([]byte(f.mustRun(t, "schema", "--format", "dbt", "--all-accounts", "--dbt-version", version)), &old); err != nil {
			t.Fatal(err)
		}
		for _, tbl := range old.Sources[0].Tables {
			if fr, _, _ := old.Sources[0].freshness(tbl); fr != nil {
				t.Errorf("--all-accounts --dbt-version %s: %s has freshness", version, tbl.Name)
			}
		}
	}
}

// checkUnionTests runs the tests of the union views' source src.
func checkUnionTests(t *testing.T, f *registryFleet, src dbtParsedSource) {
	t.Helper()
	keys := 0
	for _, tbl := range src.Tables {
		tblID := pgx.Identifier{src.Schema, tbl.Name}.Sanitize()
		var tests [][2]any
		for _, test := range tbl.DataTests {
			tests = append(tests, [2]any{"", test})
		}
		for _, col := range tbl.Columns {
			for _, test := range col.DataTests {
				tests = append(tests, [2]any{col.Name, test})
			}
		}
		for _, ct := range tests {
			pt, col := parseDBTTest(ct[1]), pgx.Identifier{ct[0].(string)}.Sanitize()
			if ct[0] == "" {
				col = pt.columnName
				keys++
			}
			q := dbtTestQuery(src.Schema, tblID, col, pt)
			if q == "" || col == "" {
				t.Errorf("%s: unknown test %v", tbl.Name, ct[1])
				continue
			}
			if n := f.count(t, q); n != 0 {
				t.Errorf("%s: test %v fails on %d rows: %s", tbl.Name, ct[1], n, q)
			}
		}
	}
	if keys != len(dbt.Keys()) {
		t.Errorf("the union's source tests %d (account, key) pairs, want %d", keys, len(dbt.Keys()))
	}
}
