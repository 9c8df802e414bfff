package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// issueRef is '#' followed by digits that end a number, as an issue
// reference is written.
var issueRef = regexp.MustCompile(`#[0-9]+\b`)

// allowedBefore are what may stand right before a '#' and digits that are no
// reference to this project's issues: another repository's issue
// (golang/go#75804), an HTML entity (&#8212;), a URL's fragment.
var allowedBefore = regexp.MustCompile(`(?:\b[\w.-]+/[\w.-]+|&|https?://\S*)$`)

// colour is a CSS colour of digits only, quoted: "#123456".
var colour = regexp.MustCompile(`^["']#(?:[0-9]{3}|[0-9]{6})["']`)

// issueRefFile says whether a file is checked: the code, SQL, scripts, docs
// and deployment files, but the changelog, where issue numbers belong.
func issueRefFile(rel string) bool {
	if rel == "CHANGELOG.md" {
		return false
	}
	switch filepath.Ext(rel) {
	case ".go", ".md", ".sql", ".sh":
		return true
	}
	return filepath.Base(rel) == "Makefile" || strings.HasPrefix(rel, "deploy/")
}

// TestNoIssueNumbers: no code comment, doc, SQL file, script, Makefile or
// deployment file refers to an issue by number, which says nothing to a
// reader without the tracker; the reason goes in words, the number in the
// CHANGELOG.
func TestNoIssueNumbers(t *testing.T) {
	t.Parallel()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !issueRefFile(rel) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range issueRef.FindAllStringIndex(line, -1) {
				if allowedBefore.MatchString(line[:m[0]]) || m[0] > 0 && colour.MatchString(line[m[0]-1:]) {
					continue
				}
				t.Errorf("%s:%d: %q refers to an issue by number: say what it was in words (the CHANGELOG keeps the numbers)", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the walk no longer finds the sources", checked)
	}
}
