package cli

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/schema"
)

var update = flag.Bool("update", false, "rewrite the generated docs (docs/configuration.md, docs/analysts.md's table reference) and the golden files in testdata/")

// TestREADMELinksSettings: the settings reference lives in
// docs/configuration.md alone, so the README links to it and holds no copy
// that could go stale.
func TestREADMELinksSettings(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, "](docs/configuration.md)") {
		t.Error("README.md does not link to docs/configuration.md, the settings reference")
	}
	for _, s0 := range config.Settings() {
		if strings.Contains(s, "| `"+s0.Env+"`") {
			t.Errorf("README.md has a table row for %s: the settings table belongs in docs/configuration.md only", s0.Env)
		}
	}
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
	checkGenerated(t, path, s[:i+len(begin)]+"\n"+schema.Markdown("usersync")+s[j:])
}
