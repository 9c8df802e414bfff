package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuaranteesCiteRealTests checks that every test docs/guarantees.md
// names exists in the repository.
func TestGuaranteesCiteRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/guarantees.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	err = filepath.WalkDir("../../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".dev" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`(Test[A-Za-z0-9_]+)(\\*?)`").FindAllStringSubmatch(string(doc), -1)
	if len(names) < 10 {
		t.Fatalf("docs/guarantees.md names only %d tests", len(names))
	}
	for _, m := range names {
		pattern := "func " + m[1] + "("
		if m[2] == "*" {
			pattern = "func " + m[1]
		}
		if !strings.Contains(sources.String(), pattern) {
			t.Errorf("docs/guarantees.md cites %s%s, which no test defines", m[1], m[2])
		}
	}
}
