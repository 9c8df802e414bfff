package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/snapshot"
)

// TestDimensionsFollowTheCatalog walks the catalog's dimensions through
// every place that lists them: the simulator serves each, a sync stores
// each in its table, the migrated warehouse, the snapshot and the dbt
// sources (of the warehouse and of the snapshots) hold its table and its
// versions view, and none of them holds a dimension the catalog lacks.
func TestDimensionsFollowTheCatalog(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 7, Users: 60})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync --full: exit %d: %s", code, errs)
	}
	var types, tables []string
	for _, r := range schema.Dimensions() {
		types, tables = append(types, r.Type), append(tables, r.Table)
		live := len(c.sim.Resources(r.Type))
		if n := countRows(t, c, r.Table); live == 0 || n != int64(live) {
			t.Errorf("%s: %d rows after a full sync, the simulator serves %d", r.Table, n, live)
		}
	}
	slices.Sort(types)
	slices.Sort(tables)

	ctx := context.Background()
	rows, err := c.store.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1
		UNION ALL SELECT table_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'version_valid_from'`,
		c.store.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	checkDimensions(t, "the migrated warehouse", names, types, tables)

	dir := t.TempDir()
	code, out, errs := run(t, c.env, "snapshot", "--out", dir, "--json")
	if code != ExitOK {
		t.Fatalf("snapshot: %s", errs)
	}
	var m snapshot.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, tm := range m.Tables {
		names = append(names, tm.Name)
		if i := slices.Index(tables, tm.Name); i >= 0 {
			names = append(names, tm.Name) // a dimension table: counted as the warehouse's are
		}
	}
	checkDimensions(t, "the snapshot", names, types, tables)

	for what, args := range map[string][]string{"the dbt sources": nil, "the snapshots' dbt sources": {"--snapshots", dir}} {
		_, p := dbtOutput(t, c.env, args...)
		names = nil
		for _, tbl := range p.Sources[0].Tables {
			names = append(names, tbl.Name)
			if slices.ContainsFunc(tbl.Columns, func(col dbtParsedColumn) bool { return col.Name == "version_valid_from" }) {
				names = append(names, tbl.Name)
			}
		}
		checkDimensions(t, what, names, types, tables)
	}
}

// checkDimensions holds a list of names, where a dimension's table appears
// twice (once as a table, once for its version_valid_from column), to the
// catalog: the views named <type>_versions other than the users' and
// memberships' are the dimensions' (one each), and so are the tables
// listed twice other than users.
func checkDimensions(t *testing.T, where string, names, types, tables []string) {
	t.Helper()
	var gotTypes, gotTables []string
	seen := map[string]bool{}
	for _, n := range names {
		typ, ok := strings.CutSuffix(n, "_versions")
		switch {
		case seen[n] && n != "users":
			gotTables = append(gotTables, n)
		case ok && typ != "user" && typ != "user_team":
			gotTypes = append(gotTypes, typ)
		}
		seen[n] = true
	}
	slices.Sort(gotTypes)
	slices.Sort(gotTables)
	if !slices.Equal(gotTypes, types) {
		t.Errorf("%s: versions views of %v, the catalog's dimensions are %v", where, gotTypes, types)
	}
	if !slices.Equal(gotTables, tables) {
		t.Errorf("%s: dimension tables %v, the catalog's are %v", where, gotTables, tables)
	}
}
