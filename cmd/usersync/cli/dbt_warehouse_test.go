package cli

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
)

// TestSchemaDBTMatchesTheWarehouse holds the sources.yml of each form to a
// migrated warehouse synced from the simulated API: every table and column
// it names exists (and it names every column), its unique ids are the
// tables' primary keys, every data test it declares holds there as dbt
// would run it, and its freshness reads the sync just run.
func TestSchemaDBTMatchesTheWarehouse(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 23, Users: 600})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync --full: exit %d: %s", code, errs)
	}
	// A second sync gives every history rows: versions superseded, a
	// membership ended, a team renamed, a user deleted.
	c.sim.UpdateUsers(80)
	m := c.sim.Memberships()[0]
	teams := c.sim.Resources("team")
	for _, err := range []error{c.sim.SetMembership(m.UserID, m.TeamID, false), c.sim.Rename("team", teams[0].ID, "Renamed"),
		c.sim.DeleteUser(c.sim.UserIDs()[1]), c.sim.Update("role", c.sim.Resources("role")[0].ID), c.sim.Update("profile", c.sim.Resources("profile")[0].ID)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatalf("second sync --full: exit %d: %s", code, errs)
	}
	histories := []string{"user_version_history", "user_team_history"}
	for _, r := range schema.Dimensions() {
		histories = append(histories, r.Type+"_history")
	}
	for _, table := range histories {
		if n := countRows(t, c, table); n == 0 {
			t.Fatalf("the second sync left %s empty", table)
		}
	}
	for version := range dbtGoldens {
		_, p := dbtOutput(t, c.env, dbtVersionArgs(version)...)
		counts := checkDBTSource(t, c, p)
		if counts["accepted_values"] < 10 || counts["unique expression"] < 9 || counts["relationships"] < 5 || counts["warn"] < 10 {
			t.Errorf("--dbt-version %q: found tests %v, want the keys', composite keys', value sets' and relationships'", version, counts)
		}
	}
}

// checkDBTSource holds one sources.yml to the warehouse of c, and counts
// its tests by kind.
func checkDBTSource(t *testing.T, c *cliEnv, p dbtParsed) map[string]int {
	t.Helper()
	src := p.Sources[0]
	if src.Schema != c.store.Schema() || src.Name != c.store.Schema() {
		t.Errorf("the source is %s of schema %q, want USERSYNC_SCHEMA %q", src.Name, src.Schema, c.store.Schema())
	}
	counts := map[string]int{}
	for _, tbl := range src.Tables {
		cols, pk := migratedColumns(t, c, tbl.Name)
		if len(cols) == 0 {
			t.Errorf("the dbt sources name %s, which the migrated schema has no table or view of", tbl.Name)
			continue
		}
		for _, test := range tbl.DataTests {
			checkDBTTest(t, c, tbl.Name, "", test, counts)
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
				if test == "unique" && len(pk) > 0 && !slices.Equal(pk, []string{col.Name}) {
					t.Errorf("%s.%s is tested unique, but the primary key is %v", tbl.Name, col.Name, pk)
				}
				checkDBTTest(t, c, tbl.Name, col.Name, test, counts)
			}
		}
		if missing := slices.DeleteFunc(slices.Clone(cols), func(col string) bool { return slices.Contains(named, col) }); len(missing) > 0 {
			t.Errorf("the dbt sources omit %s.%v", tbl.Name, missing)
		}
		if len(pk) == 1 && !slices.ContainsFunc(tbl.Columns, func(col dbtParsedColumn) bool {
			return col.Name == pk[0] && slices.Contains(col.DataTests, any("unique"))
		}) {
			t.Errorf("%s: its primary key %s has no unique test", tbl.Name, pk[0])
		}
		checkDBTLoadedAt(t, c, src, tbl)
	}
	return counts
}

// checkDBTLoadedAt runs the freshness query of tbl as dbt would: it must
// find the sync just run.
func checkDBTLoadedAt(t *testing.T, c *cliEnv, src dbtParsedSource, tbl dbtParsedTable) {
	t.Helper()
	f, field, q := src.freshness(tbl)
	if f == nil {
		return
	}
	if q == "" {
		q = fmt.Sprintf("SELECT max(%s) FROM %s WHERE %s", field, pgx.Identifier{c.store.Schema(), tbl.Name}.Sanitize(), cmp.Or(f.Filter, "true"))
	}
	var loaded *time.Time
	if err := c.store.Pool().QueryRow(context.Background(), q).Scan(&loaded); err != nil || loaded == nil || time.Since(*loaded) > 10*time.Minute {
		t.Errorf("freshness of %s: %s: %v, %v", tbl.Name, q, loaded, err)
	}
}

func countRows(t *testing.T, c *cliEnv, table string) int64 {
	t.Helper()
	var n int64
	if err := c.store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{c.store.Schema(), table}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
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

// dbtParsedTest is a generic test as read back: its name, column_name,
// arguments (from either form) and severity.
type dbtParsedTest struct {
	name, columnName, severity, description string
	args                                    map[string]any
}

func parseDBTTest(test any) dbtParsedTest {
	if s, ok := test.(string); ok {
		return dbtParsedTest{name: s}
	}
	var out dbtParsedTest
	for name, body := range test.(map[string]any) {
		b, _ := body.(map[string]any)
		out.name, out.args = name, map[string]any{}
		out.columnName, _ = b["column_name"].(string)
		out.description, _ = b["description"].(string)
		conf, _ := b["config"].(map[string]any)
		out.severity, _ = conf["severity"].(string)
		args, ok := b["arguments"].(map[string]any)
		if !ok {
			args = b
		}
		for k, v := range args {
			if !slices.Contains([]string{"column_name", "config", "description"}, k) {
				out.args[k] = v
			}
		}
	}
	return out
}

var dbtSourceRef = regexp.MustCompile(`^source\('([a-z0-9_]+)', '([a-z_]+)'\)$`)

// checkDBTTest runs one of dbt's generic tests as dbt does (the query
// counts the failing rows) on a column of table, or on table when column is
// "" (the test then names its column_name), and counts it.
func checkDBTTest(t *testing.T, c *cliEnv, table, column string, test any, counts map[string]int) {
	t.Helper()
	pt := parseDBTTest(test)
	tbl, col := pgx.Identifier{c.store.Schema(), table}.Sanitize(), pgx.Identifier{column}.Sanitize()
	if column == "" {
		col = pt.columnName
		counts[pt.name+" expression"]++
	}
	counts[pt.name]++
	if pt.severity == "warn" {
		counts["warn"]++
	}
	q := dbtTestQuery(c.store.Schema(), tbl, col, pt)
	if q == "" || col == "" {
		t.Errorf("%s.%s: unknown data test %v", table, column, test)
		return
	}
	var failing int64
	if err := c.store.Pool().QueryRow(context.Background(), q).Scan(&failing); err != nil || failing != 0 {
		t.Errorf("%s.%s: data test %v fails on %d rows (%v): %s", table, column, test, failing, err, q)
	}
}

// dbtTestQuery is the query counting the rows failing pt on col of tbl, ""
// for a test it does not know.
func dbtTestQuery(schemaName, tbl, col string, pt dbtParsedTest) string {
	switch pt.name {
	case "unique":
		return fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s WHERE %[1]s IS NOT NULL GROUP BY 1 HAVING count(*) > 1) d", col, tbl)
	case "not_null":
		return fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", tbl, col)
	case "accepted_values":
		values, _ := pt.args["values"].([]any)
		var quoted []string
		for _, v := range values {
			quoted = append(quoted, "'"+fmt.Sprint(v)+"'")
		}
		if len(quoted) == 0 {
			return ""
		}
		return fmt.Sprintf("SELECT count(*) FROM %s WHERE %s::text NOT IN (%s)", tbl, col, strings.Join(quoted, ", "))
	case "relationships":
		m := dbtSourceRef.FindStringSubmatch(fmt.Sprint(pt.args["to"]))
		if m == nil || m[1] != schemaName || pt.args["field"] != "id" {
			return ""
		}
		return fmt.Sprintf("SELECT count(*) FROM %s c WHERE c.%s IS NOT NULL AND NOT EXISTS (SELECT FROM %s p WHERE p.id = c.%[2]s)",
			tbl, col, pgx.Identifier{schemaName, m[2]}.Sanitize())
	}
	return ""
}
