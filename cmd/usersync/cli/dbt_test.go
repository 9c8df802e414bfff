package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/sync/apisim"
)

// dbtGoldens pins the sources.yml of the default settings for each form.
var dbtGoldens = map[string]string{"1.10": "testdata/dbt_sources.golden.yml", "1.9": "testdata/dbt_sources_1.9.golden.yml",
	"1.8": "testdata/dbt_sources_1.8.golden.yml"}

// dbtParsedFreshness is a freshness block as read back.
type dbtParsedFreshness struct {
	WarnAfter  dbtPeriod `yaml:"warn_after"`
	ErrorAfter dbtPeriod `yaml:"error_after"`
	Filter     string
}

// dbtParsed is what the tests read back from the sources.yml.
type dbtParsed struct {
	Version int
	Sources []struct {
		Name, Schema string
		Tables       []dbtParsedTable
	}
}

type dbtParsedTable struct {
	Name          string
	LoadedAtField string `yaml:"loaded_at_field"`
	Freshness     *dbtParsedFreshness
	Config        struct {
		LoadedAtField string `yaml:"loaded_at_field"`
		Freshness     *dbtParsedFreshness
	}
	Columns []dbtParsedColumn
}

// freshness is the table's freshness and loaded_at_field, in whichever
// form they were written.
func (tbl dbtParsedTable) freshness() (*dbtParsedFreshness, string) {
	return cmp.Or(tbl.Freshness, tbl.Config.Freshness), cmp.Or(tbl.LoadedAtField, tbl.Config.LoadedAtField)
}

type dbtParsedColumn struct {
	Name, Description string
	DataType          string `yaml:"data_type"`
	DataTests         []any  `yaml:"data_tests"`
}

// dbtOutput runs usersync schema --format dbt with env and args and parses
// what it prints.
func dbtOutput(t *testing.T, env map[string]string, args ...string) (string, dbtParsed) {
	t.Helper()
	code, out, errs := run(t, env, append([]string{"schema", "--format", "dbt"}, args...)...)
	if code != ExitOK {
		t.Fatalf("schema --format dbt %v: exit %d: %s", args, code, errs)
	}
	var p dbtParsed
	if err := yaml.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("the dbt sources do not parse as YAML: %v", err)
	}
	name := cmp.Or(env["USERSYNC_SCHEMA"], "usersync")
	if p.Version != 2 || len(p.Sources) != 1 || p.Sources[0].Name != name || len(p.Sources[0].Tables) < 10 {
		t.Fatalf("the dbt sources are not one source %s (the schema) of version 2 with its tables:\n%s", name, out)
	}
	return out, p
}

// TestSchemaDBTGolden pins the sources.yml of the default settings, for
// each form.
func TestSchemaDBTGolden(t *testing.T) {
	t.Parallel()
	for version, golden := range dbtGoldens {
		out, _ := dbtOutput(t, nil, "--dbt-version", version)
		if *update {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("usersync schema --format dbt --dbt-version %s differs from %s (go test ./cmd/usersync/cli -run TestSchemaDBTGolden -update, then review the diff)", version, golden)
		}
	}
}

// TestDBTForms: each dbt version gets the form it reads without a
// deprecation warning: 1.10 and later freshness and loaded_at_field under
// config and the relationships tests' to/field under arguments; 1.9
// freshness under config only; 1.8 everything at the top level. The
// default is the current form; a version before 1.8, or not one, is refused.
func TestDBTForms(t *testing.T) {
	t.Parallel()
	type form struct{ configFreshness, configLoadedAt, arguments bool }
	for version, want := range map[string]form{"": {true, true, true}, "1.10": {true, true, true}, "1.12": {true, true, true},
		"2.0": {true, true, true}, "1.9": {true, false, false}, "1.8": {false, false, false}} {
		args := []string{}
		if version != "" {
			args = append(args, "--dbt-version", version)
		}
		out, p := dbtOutput(t, map[string]string{"USERSYNC_SCHEMA": "sales_eu"}, args...)
		for _, tbl := range p.Sources[0].Tables {
			if tbl.Name != "sync_runs" {
				continue
			}
			got := form{tbl.Config.Freshness != nil, tbl.Config.LoadedAtField == "finished_at", false}
			if (tbl.Freshness != nil) == got.configFreshness || (tbl.LoadedAtField == "finished_at") == got.configLoadedAt {
				t.Errorf("--dbt-version %q: sync_runs has freshness and loaded_at_field both at the top level and under config, or neither", version)
			}
			got.arguments = strings.Contains(out, "arguments:")
			if got != want {
				t.Errorf("--dbt-version %q: form %+v, want %+v", version, got, want)
			}
		}
		if !strings.Contains(out, "source('sales_eu', 'users')") || strings.Contains(out, "source('usersync',") {
			t.Errorf("--dbt-version %q: the relationships tests do not name the source sales_eu", version)
		}
	}
	for _, bad := range []string{"1.7", "0.21", "1", "latest", "1.x"} {
		if code, _, errs := run(t, nil, "schema", "--format", "dbt", "--dbt-version", bad); code != ExitUsage || !strings.Contains(errs, "--dbt-version") {
			t.Errorf("--dbt-version %s: exit %d: %s", bad, code, errs)
		}
	}
}

// TestDBTFreshnessFollowsTheSchedule: warn after two of the sync schedule's
// longest intervals, error after six, on successful syncs' finished_at.
func TestDBTFreshnessFollowsTheSchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schedule    string
		warn, error dbtPeriod
	}{
		{"*/15 * * * *", dbtPeriod{30, "minute"}, dbtPeriod{90, "minute"}},
		{"@hourly", dbtPeriod{2, "hour"}, dbtPeriod{6, "hour"}},
		{"@every 45m", dbtPeriod{90, "minute"}, dbtPeriod{270, "minute"}},
		{"0 3 * * *", dbtPeriod{2, "day"}, dbtPeriod{6, "day"}},
		{"0 9 * * 1-5", dbtPeriod{6, "day"}, dbtPeriod{18, "day"}},                           // Friday to Monday
		{"CRON_TZ=Europe/Paris 30 8,17 * * *", dbtPeriod{30, "hour"}, dbtPeriod{90, "hour"}}, // 17:30 to 8:30
		{"0 4 1 * *", dbtPeriod{62, "day"}, dbtPeriod{186, "day"}},                           // January to February
		{"off", dbtPeriod{}, dbtPeriod{}},
		{"0 0 30 2 *", dbtPeriod{}, dbtPeriod{}}, // February 30th: never
	}
	for _, tt := range tests {
		t.Run(tt.schedule, func(t *testing.T) {
			t.Parallel()
			_, p := dbtOutput(t, map[string]string{"USERSYNC_SYNC_SCHEDULE": tt.schedule})
			fresh := 0
			for _, tbl := range p.Sources[0].Tables {
				f, loadedAt := tbl.freshness()
				if f == nil {
					continue
				}
				fresh++
				if tbl.Name != "sync_runs" || loadedAt != "finished_at" || f.Filter != dbtFreshnessFilter ||
					f.WarnAfter != tt.warn || f.ErrorAfter != tt.error {
					t.Errorf("%s: freshness on %s.%s: warn %v, error %v, filter %q; want sync_runs.finished_at, %v, %v",
						tt.schedule, tbl.Name, loadedAt, f.WarnAfter, f.ErrorAfter, f.Filter, tt.warn, tt.error)
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tt.warn.Count == 0]; fresh != want {
				t.Errorf("%s: %d tables with freshness, want %d", tt.schedule, fresh, want)
			}
		})
	}
}

// TestSchemaDBTMatchesTheWarehouse holds the sources.yml to a migrated
// warehouse synced from the simulated API: every table and column it names
// exists (and it names every column), its unique ids are the tables' primary
// keys, and every data test it declares and its freshness filter hold there
// as dbt would run them.
func TestSchemaDBTMatchesTheWarehouse(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 23, Users: 600})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync --full: exit %d: %s", code, errs)
	}
	for version := range dbtGoldens {
		_, p := dbtOutput(t, c.env, "--dbt-version", version)
		checkDBTSource(t, c, p)
	}
}

// checkDBTSource holds one sources.yml to the warehouse of c.
func checkDBTSource(t *testing.T, c *cliEnv, p dbtParsed) {
	t.Helper()
	src := p.Sources[0]
	if src.Schema != c.store.Schema() {
		t.Errorf("the source's schema is %q, want USERSYNC_SCHEMA %q", src.Schema, c.store.Schema())
	}
	tests := 0
	for _, tbl := range src.Tables {
		cols, pk := migratedColumns(t, c, tbl.Name)
		if len(cols) == 0 {
			t.Errorf("the dbt sources name %s, which the migrated schema has no table or view of", tbl.Name)
			continue
		}
		var named []string
		for _, col := range tbl.Columns {
			named = append(named, col.Name)
			if !slices.Contains(cols, col.Name) {
				t.Errorf("the dbt sources name %s.%s, which the migrated schema lacks", tbl.Name, col.Name)
			}
			if col.Description == "" || col.DataType == "" {
				t.Errorf("%s.%s has no description or data_type", tbl.Name, col.Name)
			}
			for _, test := range col.DataTests {
				tests++
				if test == "unique" && len(pk) > 0 && !slices.Equal(pk, []string{col.Name}) {
					t.Errorf("%s.%s is tested unique, but the primary key is %v", tbl.Name, col.Name, pk)
				}
				checkDBTTest(t, c, tbl.Name, col.Name, test)
			}
		}
		for _, col := range cols {
			if !slices.Contains(named, col) {
				t.Errorf("the dbt sources omit %s.%s", tbl.Name, col)
			}
		}
		if len(pk) == 1 && !slices.ContainsFunc(tbl.Columns, func(col dbtParsedColumn) bool {
			return col.Name == pk[0] && slices.Contains(col.DataTests, any("unique"))
		}) {
			t.Errorf("%s: its primary key %s has no unique test", tbl.Name, pk[0])
		}
		if f, loadedAt := tbl.freshness(); f != nil {
			var n int64
			q := fmt.Sprintf("SELECT count(%s) FROM %s WHERE %s", pgx.Identifier{loadedAt}.Sanitize(),
				pgx.Identifier{c.store.Schema(), tbl.Name}.Sanitize(), f.Filter)
			if err := c.store.Pool().QueryRow(context.Background(), q).Scan(&n); err != nil || n == 0 {
				t.Errorf("freshness of %s: %s: %d rows, %v", tbl.Name, q, n, err)
			}
		}
	}
	if tests < 20 {
		t.Errorf("found %d data tests, want the keys' and the relationships'", tests)
	}
}

// migratedColumns returns the columns of a table or view of the migrated
// schema, and a table's primary key.
func migratedColumns(t *testing.T, c *cliEnv, table string) (cols, pk []string) {
	t.Helper()
	ctx := context.Background()
	rows, err := c.store.Pool().Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, c.store.Schema(), table)
	if err != nil {
		t.Fatal(err)
	}
	if cols, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	rows, err = c.store.Pool().Query(ctx, `SELECT k.column_name FROM information_schema.table_constraints tc
		JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name)
		WHERE tc.table_schema = $1 AND tc.table_name = $2 AND tc.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position`,
		c.store.Schema(), table)
	if err != nil {
		t.Fatal(err)
	}
	if pk, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	return cols, pk
}

var dbtSourceRef = regexp.MustCompile(`^source\('([a-z0-9_]+)', '([a-z_]+)'\)$`)

// checkDBTTest runs one of dbt's generic tests as dbt does: the query counts
// the failing rows.
func checkDBTTest(t *testing.T, c *cliEnv, table, column string, test any) {
	t.Helper()
	id := func(names ...string) string { return pgx.Identifier(names).Sanitize() }
	tbl, col := id(c.store.Schema(), table), id(column)
	var q string
	switch test := test.(type) {
	case string:
		q = map[string]string{
			"unique":   fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s WHERE %[1]s IS NOT NULL GROUP BY 1 HAVING count(*) > 1) d", col, tbl),
			"not_null": fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", tbl, col),
		}[test]
	case map[string]any:
		rel, _ := test["relationships"].(map[string]any)
		if args, ok := rel["arguments"].(map[string]any); ok {
			rel = args
		}
		m := dbtSourceRef.FindStringSubmatch(fmt.Sprint(rel["to"]))
		if m == nil || m[1] != c.store.Schema() || rel["field"] != "id" {
			t.Errorf("%s.%s: relationships test %v does not name a table's id in the source %s", table, column, test, c.store.Schema())
			return
		}
		q = fmt.Sprintf("SELECT count(*) FROM %s c WHERE c.%s IS NOT NULL AND NOT EXISTS (SELECT FROM %s p WHERE p.id = c.%[2]s)",
			tbl, col, id(c.store.Schema(), m[2]))
	}
	if q == "" {
		t.Errorf("%s.%s: unknown data test %v", table, column, test)
		return
	}
	var failing int64
	if err := c.store.Pool().QueryRow(context.Background(), q).Scan(&failing); err != nil || failing != 0 {
		t.Errorf("%s.%s: data test %v fails on %d rows (%v): %s", table, column, test, failing, err, q)
	}
}
