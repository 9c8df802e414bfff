//go:build duckdb

// DuckDB resolving the dbt-duckdb sources of the snapshots, as dbt-duckdb
// would (dbt itself is not installed here). It needs cgo:
//
//	go test -tags duckdb -run TestDBTSnapshotsResolveInDuckDB ./cmd/usersync/cli/
package cli

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "github.com/marcboeker/go-duckdb"

	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/snapshot"
)

// TestDBTSnapshotsResolveInDuckDB: every table's meta.external_location of
// usersync schema --format dbt --snapshots reads, in DuckDB, the rows of the
// newest snapshot, with the columns and types the sources.yml declares, and
// its unique and not_null tests hold there.
func TestDBTSnapshotsResolveInDuckDB(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 52, Users: 300})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	code, out, errs := run(t, c.env, "snapshot", "--out", dir, "--json")
	if code != ExitOK {
		t.Fatalf("snapshot: %s", errs)
	}
	var m snapshot.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, c.env, "schema", "--format", "dbt", "--snapshots", dir)
	if code != ExitOK {
		t.Fatalf("schema --format dbt --snapshots: %s", errs)
	}
	var doc struct {
		Sources []struct {
			Tables []struct {
				Name string
				Meta struct {
					ExternalLocation string `yaml:"external_location"`
				}
				DataTests []any `yaml:"data_tests"`
				Columns   []struct {
					Name      string
					DataType  string `yaml:"data_type"`
					DataTests []any  `yaml:"data_tests"`
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tested := 0
	if len(doc.Sources) != 1 || len(doc.Sources[0].Tables) != len(m.Tables) {
		t.Fatalf("the sources name %d tables, the snapshot holds %d", len(doc.Sources[0].Tables), len(m.Tables))
	}
	for _, tbl := range doc.Sources[0].Tables {
		tm, ok := m.Table(tbl.Name)
		if !ok {
			t.Errorf("%s is not in the snapshot", tbl.Name)
			continue
		}
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM " + tbl.Meta.ExternalLocation).Scan(&n); err != nil || n != tm.Rows {
			t.Errorf("%s: %s reads %d rows (%v), the snapshot holds %d", tbl.Name, tbl.Meta.ExternalLocation, n, err, tm.Rows)
		}
		rows, err := db.Query("SELECT column_name, lower(column_type) FROM (DESCRIBE SELECT * FROM " + tbl.Meta.ExternalLocation + ")")
		if err != nil {
			t.Fatalf("%s: %v", tbl.Name, err)
		}
		var got []string
		for rows.Next() {
			var col, typ string
			if err := rows.Scan(&col, &typ); err != nil {
				t.Fatal(err)
			}
			got = append(got, col+" "+typ)
		}
		rows.Close()
		var want []string
		for _, col := range tbl.Columns {
			want = append(want, col.Name+" "+col.DataType)
		}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("%s: DuckDB reads columns\n  %s\nthe sources.yml declares\n  %s", tbl.Name, strings.Join(got, ", "), strings.Join(want, ", "))
		}
		var checks []string // queries counting the rows that fail a unique or not_null test
		for _, test := range tbl.DataTests {
			if m, ok := test.(map[string]any); ok {
				if u, ok := m["unique"].(map[string]any); ok {
					checks = append(checks, dbtUniqueFailures(u["column_name"].(string), tbl.Meta.ExternalLocation))
				}
			}
		}
		for _, col := range tbl.Columns {
			for _, test := range col.DataTests {
				switch test {
				case "unique":
					checks = append(checks, dbtUniqueFailures(`"`+col.Name+`"`, tbl.Meta.ExternalLocation))
				case "not_null":
					checks = append(checks, `SELECT count(*) FROM `+tbl.Meta.ExternalLocation+` WHERE "`+col.Name+`" IS NULL`)
				}
			}
		}
		tested += len(checks)
		for _, q := range checks {
			if err := db.QueryRow(q).Scan(&n); err != nil || n != 0 {
				t.Errorf("%s: %d rows fail a test (%v):\n%s", tbl.Name, n, err, q)
			}
		}
	}
	if tested < 15 {
		t.Errorf("only %d unique and not_null tests were checked", tested)
	}
}

// dbtUniqueFailures counts the values of expr over from that are not
// unique, as dbt's unique test does.
func dbtUniqueFailures(expr, from string) string {
	return "SELECT count(*) FROM (SELECT k FROM (SELECT " + expr + " AS k FROM " + from + ") WHERE k IS NOT NULL GROUP BY k HAVING count(*) > 1)"
}
