package dbt

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestParseVersion: a version takes what dbt --version prints, or
// major.minor (the minor's first release), and picks the form by dbt's
// cut-offs, 1.9.5 and 1.10.8; before 1.8, or not a version, is refused.
func TestParseVersion(t *testing.T) {
	t.Parallel()
	for version, want := range map[string]Form{"": FormCurrent, "1.8": FormLegacy, "1.8.0": FormLegacy,
		"1.8.10": FormLegacy, "1.9": FormLegacy, "1.9.4": FormLegacy, "1.9.5": FormConfig, "1.9.11": FormConfig,
		"1.10": FormConfig, "1.10.7": FormConfig, "1.10.8": FormCurrent, "1.10.23": FormCurrent,
		"1.11": FormCurrent, "1.11.14": FormCurrent, "1.12.0": FormCurrent, "2.0": FormCurrent} {
		if got, err := ParseVersion(version); err != nil || got != want {
			t.Errorf("--dbt-version %q: form %d (%v), want %d", version, got, err, want)
		}
	}
	for _, bad := range []string{"1.7", "1.7.19", "0.21", "1", "latest", "1.x", "1.10.x", "1.10.8.1", "v1.10.8", "1.10.8b1"} {
		if _, err := ParseVersion(bad); err == nil || !strings.Contains(err.Error(), "--dbt-version") {
			t.Errorf("--dbt-version %s: %v, want an error naming --dbt-version", bad, err)
		}
	}
}

// TestSnapshotSourcesTypes: every column's data_type is DuckDB's name for
// what the snapshots hold.
func TestSnapshotSourcesTypes(t *testing.T) {
	t.Parallel()
	out, err := SnapshotSources("usersync", "/s", Options{Form: FormCurrent})
	if err != nil {
		t.Fatal(err)
	}
	var f dbtFile
	if err := yaml.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range dbtDuckDBTypes {
		names = append(names, v)
	}
	if len(f.Sources) != 1 || len(f.Sources[0].Tables) == 0 {
		t.Fatalf("not one source with tables:\n%s", out)
	}
	for _, tbl := range f.Sources[0].Tables {
		for _, c := range tbl.Columns {
			if c.DataType == "" || !slices.Contains(names, c.DataType) {
				t.Errorf("%s.%s: data_type %q is not one of DuckDB's", tbl.Name, c.Name, c.DataType)
			}
		}
	}
}
