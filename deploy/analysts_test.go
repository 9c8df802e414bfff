package deploy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/cmd/usersync/cli"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// pgOnlyMark, in an example's leading comment, says the example does not run
// on DuckDB over the snapshots; every other example of docs/analysts.md's
// PostgreSQL blocks runs on both engines.
const pgOnlyMark = "PostgreSQL only"

// example is one SQL statement of a doc.
type example struct {
	where  string // doc and line of its block
	sql    string
	duck   bool // a "-- DuckDB" block's: DuckDB only
	pgOnly bool // marked pgOnlyMark
	rows   bool // in "Example queries": must return rows
}

// sqlExamples returns the statements of doc's sql blocks that lie in the
// sections whose headings start with one of sections ("" for every one).
func sqlExamples(t *testing.T, doc string, sections ...string) []example {
	t.Helper()
	md := readFile(t, doc)
	var out []example
	for _, b := range codeBlocks(md) {
		if b.lang != "sql" {
			continue
		}
		section := sectionAt(md, b.line)
		if !hasAnyPrefix(section, sections) {
			continue
		}
		duck := strings.HasPrefix(b.text, "-- DuckDB")
		for _, s := range statementEnd.Split(b.text, -1) {
			if strings.TrimSpace(withoutComments(s)) == "" {
				continue
			}
			out = append(out, example{where: fmt.Sprintf("%s (block at line %d)", doc, b.line), sql: s, duck: duck,
				pgOnly: strings.Contains(leadingComment(s), pgOnlyMark), rows: section == "Example queries"})
		}
	}
	return out
}

// statementEnd ends a statement: a semicolon at the end of a line.
var statementEnd = regexp.MustCompile(`;[ \t]*(\n|$)`)

// sectionAt is the heading (without #s) of the "## " section holding line.
func sectionAt(md string, line int) string {
	section := ""
	for i, l := range strings.Split(md, "\n") {
		if i+1 >= line {
			break
		}
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimPrefix(l, "## ")
		}
	}
	return section
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return len(prefixes) == 0
}

// leadingComment is the comment lines before a statement's first line of SQL.
func leadingComment(s string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			break
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestAnalystsSQL runs every example of docs/analysts.md, and the README's
// for analysts, on PostgreSQL against a warehouse synced from the simulated
// API that has lived through two days of changes, so the examples cannot
// rot and the as-of ones (a day back) find something; then every example not
// marked PostgreSQL-only, and every "-- DuckDB" block, on DuckDB over a
// snapshot of that warehouse. An example must return as many
// rows on DuckDB as on PostgreSQL, and those of "Example queries" some rows.
func TestAnalystsSQL(t *testing.T) {
	t.Parallel()
	examples := sqlExamples(t, "docs/analysts.md")
	// The README's few: its PostgreSQL ones for PostgreSQL (it makes no
	// views of the snapshot), its DuckDB ones for DuckDB.
	for _, ex := range sqlExamples(t, "README.md", "For analysts") {
		ex.pgOnly = !ex.duck
		examples = append(examples, ex)
	}
	if len(examples) < 20 {
		t.Fatalf("found only %d SQL examples in docs/analysts.md and the README", len(examples))
	}
	duck := newDuckDB(t)
	pool, name, run := livedWarehouse(t)

	pgRows := make([]int, len(examples))
	for i, ex := range examples {
		if ex.duck {
			continue
		}
		n, err := countRows(pool, name, ex.sql)
		pgRows[i] = n
		if err != nil {
			t.Errorf("%s: PostgreSQL: %v\n%s", ex.where, err, strings.TrimSpace(ex.sql))
		} else if n == 0 && ex.rows {
			t.Errorf("%s: PostgreSQL: the example returned no rows in a warehouse two days old:\n%s", ex.where, strings.TrimSpace(ex.sql))
		}
		t.Logf("PostgreSQL, %d rows: %s", n, firstLine(withoutComments(ex.sql)))
	}

	dir := t.TempDir()
	run("snapshot", "--out", dir)
	// The DuckDB blocks first: they make the views the shared examples read.
	var stmts []string
	var on []int
	for _, pass := range []bool{true, false} {
		for i, ex := range examples {
			if ex.duck == pass && !ex.pgOnly {
				stmts = append(stmts, inDeployment(ex.sql, name))
				on = append(on, i)
			}
		}
	}
	results := duck.run(t, dir, stmts)
	for j, res := range results {
		ex := examples[on[j]]
		switch {
		case res.Error != "":
			t.Errorf("%s: DuckDB: %s\n%s", ex.where, res.Error, strings.TrimSpace(ex.sql))
		case !ex.duck && res.Rows != pgRows[on[j]]:
			t.Errorf("%s: DuckDB returned %d rows, PostgreSQL %d (mark it %q if it cannot run on DuckDB):\n%s",
				ex.where, res.Rows, pgRows[on[j]], pgOnlyMark, strings.TrimSpace(ex.sql))
		case ex.duck && res.Rows == 0 && isQuery(ex.sql):
			t.Errorf("%s: DuckDB: the query returned no rows over the snapshot:\n%s", ex.where, strings.TrimSpace(ex.sql))
		}
		if strings.Contains(ex.sql, "usersync.meaning.") {
			checkMeanings(t, ex.where, res.First)
		}
		t.Logf("DuckDB, %d rows: %s", res.Rows, firstLine(withoutComments(ex.sql)))
	}
}

// inDeployment is a DuckDB statement of the doc, which reads deployment
// usersync's snapshots, made to read deployment name's.
func inDeployment(sql, name string) string {
	sql = strings.ReplaceAll(sql, "'usersync/", "'"+name+"/")
	return strings.ReplaceAll(sql, "schema = 'usersync'", "schema = '"+name+"'")
}

// checkMeanings checks the rows of the DuckDB example that lists the meaning
// of users' columns from a file's metadata: one per snapshot column, as the
// catalog says.
func checkMeanings(t *testing.T, where string, rows [][]*string) {
	t.Helper()
	users, _ := schema.TableNamed("users")
	want := map[string]string{}
	for _, c := range users.SnapshotColumns() {
		want[c.Name] = c.Meaning
	}
	got := map[string]string{}
	for _, r := range rows {
		if len(r) == 2 && r[0] != nil && r[1] != nil {
			got[*r[0]] = *r[1]
		}
	}
	for col, meaning := range want {
		if got[col] != meaning {
			t.Errorf("%s: DuckDB reads the meaning of users.%s as %q from the file's metadata, want %q", where, col, got[col], meaning)
		}
	}
}

func isQuery(sql string) bool {
	first := strings.ToUpper(strings.TrimSpace(withoutComments(sql)))
	return strings.HasPrefix(first, "SELECT") || strings.HasPrefix(first, "WITH") || strings.HasPrefix(first, "FROM")
}

// countRows runs a statement in the warehouse schema and counts its rows.
func countRows(pool *pgxpool.Pool, name, stmt string) (int, error) {
	ctx := context.Background()
	n := 0
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL search_path = "`+name+`"`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, stmt)
		if err != nil {
			return err
		}
		for rows.Next() {
			n++
		}
		return rows.Err()
	})
	return n, err
}

// livedWarehouse is a warehouse synced from the simulated API, aged two days
// (ageWarehouse), changed and synced and reconciled again: it has a past a
// day back, and one quarantined user. run runs usersync against it.
func livedWarehouse(t *testing.T) (*pgxpool.Pool, string, func(args ...string)) {
	t.Helper()
	sim := apisim.New(apisim.Options{Seed: 11, Users: 400, Knobs: apisim.Knobs{WrongTypeRate: 0.01}})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "",
		"USERSYNC_API_URL": srv.URL, "USERSYNC_API_TOKEN": "deploy-test-token"}
	run := func(args ...string) {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := cli.Main(context.Background(), args, environOf(env), &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("usersync %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
	}
	run("migrate")
	run("sync", "--full")
	ageWarehouse(t, pool, name, 48*time.Hour)
	liveThroughChanges(t, sim)
	run("sync")
	run("reconcile")
	return pool, name, run
}

// warehouseTimes are the columns that hold warehouse time (when usersync saw
// or wrote something), as opposed to the API's own times (updated_at, the
// watermark), which ageWarehouse leaves alone.
var warehouseTimes = []string{"valid_from", "valid_to", "version_valid_from", "synced_at", "deleted_at",
	"started_at", "finished_at", "heartbeat_at", "received_at", "resolved_at"}

// ageWarehouse moves every warehouse time of schema name back by d: the
// warehouse then looks as if its first sync ran d ago, as a deployment's
// does, so that the examples' "a day back" has a past to find.
func ageWarehouse(t *testing.T, pool *pgxpool.Pool, name string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT c.table_name, string_agg(format('%1$I = %1$I - $1::interval', c.column_name), ', ')
		FROM information_schema.columns c
		JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
		WHERE c.table_schema = $1 AND tb.table_type = 'BASE TABLE' AND c.data_type = 'timestamp with time zone'
		  AND c.column_name = ANY($2)
		GROUP BY c.table_name`, name, warehouseTimes)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Table, Set string }])
	if err != nil || len(sets) < 5 {
		t.Fatalf("finding the warehouse-time columns: %d tables, %v", len(sets), err)
	}
	for _, s := range sets {
		q := "UPDATE " + pgx.Identifier{name, s.Table}.Sanitize() + " SET " + s.Set
		if _, err := pool.Exec(ctx, q, fmt.Sprintf("%d seconds", int64(d.Seconds()))); err != nil {
			t.Fatalf("ageing %s: %v", s.Table, err)
		}
	}
}

// liveThroughChanges changes users, memberships, teams and roles the ways
// the history keeps.
func liveThroughChanges(t *testing.T, sim *apisim.Server) {
	t.Helper()
	sim.UpdateUsers(40)
	m := sim.Memberships()
	roles := sim.Resources("role")
	for _, err := range []error{
		sim.SetMembership(m[0].UserID, m[0].TeamID, false),
		sim.Rename("team", m[1].TeamID, "Renamed team"),
		sim.Rename("role", roles[2].ID, "Renamed role"),
		sim.SetRoleParent(roles[3].ID, roles[0].ID),
		sim.Delete("team", m[len(m)-1].TeamID),
		sim.DeleteUser(m[2].UserID),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
