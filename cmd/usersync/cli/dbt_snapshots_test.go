package cli

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/schema"
)

// dbtSnapshotsGolden pins the dbt-duckdb sources.yml of the snapshots, for
// a destination with a quote in its name.
const dbtSnapshotsGolden = "testdata/dbt_sources_snapshots.golden.yml"

// dbtSnapshotsGrammar: the default form's keys, each table's
// meta.external_location, and no freshness anywhere.
var dbtSnapshotsGrammar = dbtGrammar{
	want: []string{"sources.tables.meta.external_location", "sources.tables.columns.data_tests.test.arguments.to",
		"sources.tables.columns.data_tests.test.arguments.values", "sources.tables.data_tests.test.column_name",
		"sources.tables.columns.config.meta.personal_data", "sources.tables.columns.config.tags"},
	forbid: append(slices.Clone(dbtGrammars[""].forbid), "freshness", "loaded_at_query", "sources.config"),
}

// TestSchemaDBTSnapshotsGolden pins the snapshots' sources.yml and holds it
// to its grammar: only the tables snapshots hold, each at its stable path,
// with the columns the snapshots hold and no relationship to a table they
// do not.
func TestSchemaDBTSnapshotsGolden(t *testing.T) {
	t.Parallel()
	out, p := dbtOutput(t, nil, "--snapshots", "/srv/o'brien/snapshots/")
	if *update {
		if err := os.WriteFile(dbtSnapshotsGolden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(dbtSnapshotsGolden); err != nil || out != string(want) {
		t.Errorf("usersync schema --format dbt --snapshots differs from %s (%v; go test ./cmd/usersync/cli -run TestSchemaDBTSnapshotsGolden -update, then review the diff)", dbtSnapshotsGolden, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	paths := map[string][]string{}
	dbtPaths(doc, "", paths, "")
	checkDBTGrammar(t, dbtSnapshotsGolden, dbtSnapshotsGrammar, paths)

	var locs struct {
		Sources []struct {
			Tables []struct {
				Name string
				Meta struct {
					ExternalLocation string `yaml:"external_location"`
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(out), &locs); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tbl := range schema.Tables() {
		if tbl.Snapshot {
			want = append(want, tbl.Name)
		}
	}
	var got []string
	for i, tbl := range locs.Sources[0].Tables {
		got = append(got, tbl.Name)
		loc := "read_parquet('/srv/o''brien/snapshots/usersync/" + tbl.Name + "/current/*.parquet')"
		if tbl.Meta.ExternalLocation != loc {
			t.Errorf("%s: external_location %q, want %q", tbl.Name, tbl.Meta.ExternalLocation, loc)
		}
		cat, _ := schema.TableNamed(tbl.Name)
		if cols := p.Sources[0].Tables[i].Columns; len(cols) != len(cat.SnapshotColumns()) {
			t.Errorf("%s: %d columns, the snapshots hold %d", tbl.Name, len(cols), len(cat.SnapshotColumns()))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("tables %q, want those snapshots hold %q", got, want)
	}
	for _, no := range []string{"sync_runs", "sync_state", "quarantine", "user_version_history"} {
		if strings.Contains(out, "source('usersync', '"+no+"')") || slices.Contains(got, no) {
			t.Errorf("the snapshots' sources name %s, which snapshots do not hold", no)
		}
	}
}

// TestSchemaDBTSnapshotsDestinations: an s3:// or file:// destination is
// named as DuckDB reads it; a bad one, or --snapshots with --all-accounts,
// is refused in one line.
func TestSchemaDBTSnapshotsDestinations(t *testing.T) {
	t.Parallel()
	for dest, loc := range map[string]string{"s3://bucket/warehouse/prod": "s3://bucket/warehouse/prod/usersync/users/current/*.parquet",
		"file:///var/lib/usersync/snapshots": "/var/lib/usersync/snapshots/usersync/users/current/*.parquet"} {
		out, _ := dbtOutput(t, nil, "--snapshots", dest)
		if !strings.Contains(out, "external_location: read_parquet('"+loc+"')") {
			t.Errorf("--snapshots %s: no external_location reading %s", dest, loc)
		}
	}
	for _, args := range [][]string{{"--snapshots", "ftp://x/y"}, {"--snapshots", "s3://user:pw@bucket/p"}, {"--snapshots", "/x", "--all-accounts"}} {
		code, _, errs := run(t, nil, append([]string{"schema", "--format", "dbt"}, args...)...)
		if code == ExitOK || strings.Count(strings.TrimSpace(errs), "\n") > 0 || strings.Contains(errs, "pw") {
			t.Errorf("schema --format dbt %q: exit %d, %q; want a one-line refusal", args, code, errs)
		}
	}
}
