package cli

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated parts of README.md and the golden files in testdata/")

const (
	beginSettings = "<!-- settings:begin (generated from cmd/usersync/cli/settings.go; go test ./cmd/usersync/cli -run TestREADMESettings -update) -->\n"
	endSettings   = "<!-- settings:end -->"
)

// TestREADMESettings keeps the README's configuration table equal to the
// settings the code reads.
func TestREADMESettings(t *testing.T) {
	const path = "../../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, beginSettings), strings.Index(s, endSettings)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the settings markers")
	}
	want := s[:i+len(beginSettings)] + SettingsMarkdown() + s[j:]
	if want == s {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("README.md's settings table is stale: run go test ./cmd/usersync/cli -run TestREADMESettings -update")
}

// TestDocsConfiguration keeps docs/configuration.md equal to the settings
// the code reads (make docs rewrites it).
func TestDocsConfiguration(t *testing.T) {
	checkGenerated(t, "../../../docs/configuration.md", ConfigurationMarkdown())
}

func checkGenerated(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err == nil && string(got) == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: run make docs", path)
}

// TestDocsAnalystsSchema keeps the table reference in docs/analysts.md equal
// to the catalog (make docs rewrites it).
func TestDocsAnalystsSchema(t *testing.T) {
	const path = "../../../docs/analysts.md"
	const begin, end = "<!-- schema:begin (generated: make docs) -->\n", "<!-- schema:end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("docs/analysts.md lacks the schema markers")
	}
	checkGenerated(t, path, s[:i+len(begin)]+"\n"+SchemaMarkdown("usersync")+s[j:])
}
