package cli

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// dbtPaths are the keys of a parsed YAML document as dotted paths through
// the mappings, sequences left out (sources.tables.columns.name); a generic
// test's name is written test (sources.tables.columns.data_tests.test.to),
// and the table of a path under a table is noted in tables.
func dbtPaths(node any, prefix string, out map[string][]string, table string) {
	switch n := node.(type) {
	case []any:
		for _, item := range n {
			if m, ok := item.(map[string]any); ok && prefix == "sources.tables" {
				table, _ = m["name"].(string)
			}
			dbtPaths(item, prefix, out, table)
		}
	case map[string]any:
		for k, v := range n {
			name := k
			if strings.HasSuffix(prefix, ".data_tests") {
				name = "test"
			}
			path := strings.TrimPrefix(prefix+"."+name, ".")
			out[path] = append(out[path], table)
			dbtPaths(v, path, out, table)
		}
	}
}

// dbtGrammar is what a form's sources.yml must hold and must not: paths
// (see dbtPaths), a prefix ending in "." standing for any path under it,
// and the tables the freshness paths may be on.
type dbtGrammar struct {
	want, forbid []string
	freshOn      []string // the only tables with freshness at table level
}

// dbtGrammars gives each golden's grammar: the oldest form has no key of the
// later ones (config freshness, arguments, loaded_at_query, test
// descriptions, column config), the middle one none of the newest.
var dbtGrammars = map[string]dbtGrammar{
	"1.8": {
		want: []string{"sources.tables.freshness.warn_after.count", "sources.tables.freshness.filter", "sources.tables.loaded_at_field",
			"sources.tables.columns.data_tests.test.to", "sources.tables.columns.data_tests.test.values", "sources.tables.columns.data_tests.test.config.severity",
			"sources.tables.data_tests.test.column_name", "sources.tables.columns.meta.personal_data", "sources.tables.columns.tags"},
		forbid: []string{"sources.config", "sources.tables.config", "sources.tables.columns.config", "sources.tables.columns.data_tests.test.arguments",
			"sources.tables.data_tests.test.arguments", "sources.tables.columns.data_tests.test.description", "sources.tables.data_tests.test.description",
			"loaded_at_query"},
		freshOn: []string{"sync_runs"},
	},
	"1.9.5": {
		want: []string{"sources.tables.config.freshness.warn_after.count", "sources.tables.config.freshness.filter", "sources.tables.loaded_at_field",
			"sources.tables.columns.data_tests.test.to", "sources.tables.columns.data_tests.test.values", "sources.tables.columns.data_tests.test.description",
			"sources.tables.data_tests.test.column_name", "sources.tables.columns.meta.personal_data", "sources.tables.columns.tags"},
		forbid: []string{"sources.config", "sources.tables.freshness", "sources.tables.config.loaded_at_field", "sources.tables.columns.config",
			"sources.tables.columns.data_tests.test.arguments", "sources.tables.data_tests.test.arguments", "loaded_at_query"},
		freshOn: []string{"sync_runs"},
	},
	"": {
		want: []string{"sources.config.freshness.warn_after.count", "sources.config.loaded_at_query", "sources.tables.columns.data_tests.test.arguments.to",
			"sources.tables.columns.data_tests.test.arguments.values", "sources.tables.columns.data_tests.test.description",
			"sources.tables.data_tests.test.column_name", "sources.tables.columns.config.meta.personal_data", "sources.tables.columns.config.tags"},
		forbid: []string{"sources.tables.freshness", "sources.tables.config", "loaded_at_field", "sources.config.freshness.filter",
			"sources.tables.columns.data_tests.test.to", "sources.tables.columns.data_tests.test.values", "sources.tables.data_tests.test.values",
			"sources.tables.columns.meta", "sources.tables.columns.tags"},
	},
}

// TestDBTGoldensFollowTheirGrammar parses each golden and holds it to its
// form's grammar: where freshness, loaded_at and the tests' arguments sit,
// and that no key of a later form appears in an earlier one.
func TestDBTGoldensFollowTheirGrammar(t *testing.T) {
	t.Parallel()
	for version, golden := range dbtGoldens {
		g, ok := dbtGrammars[version]
		if !ok {
			t.Fatalf("no grammar for the golden of --dbt-version %q", version)
		}
		data, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		paths := map[string][]string{}
		dbtPaths(doc, "", paths, "")
		checkDBTGrammar(t, golden, g, paths)
	}
}

func checkDBTGrammar(t *testing.T, golden string, g dbtGrammar, paths map[string][]string) {
	t.Helper()
	for _, w := range g.want {
		if _, ok := paths[w]; !ok {
			t.Errorf("%s lacks %s", golden, w)
		}
	}
	for path, tables := range paths {
		for _, f := range g.forbid {
			if path == f || strings.HasPrefix(path, f+".") || strings.HasSuffix(path, "."+f) || strings.Contains(path, "."+f+".") {
				t.Errorf("%s has %s, which its form must not", golden, path)
			}
		}
		if !strings.HasPrefix(path, "sources.tables.freshness") && !strings.HasPrefix(path, "sources.tables.config.freshness") {
			continue
		}
		for _, table := range tables {
			if !slices.Contains(g.freshOn, table) {
				t.Errorf("%s has freshness on %s, want it on %v only", golden, table, g.freshOn)
			}
		}
	}
}
