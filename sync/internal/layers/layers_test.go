// Package layers holds a test: docs/DEVELOPING.md's package list is the module's
// real import graph, arrow for arrow.
package layers

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/usersync/usersync"

// TestPackageListIsTheImports compares the arrows between the block
// <!-- packages:begin --> and <!-- packages:end --> of docs/DEVELOPING.md with the
// imports `go list` reports for the module's packages (tests left out).
func TestPackageListIsTheImports(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	declared := listedArrows(t, filepath.Join(root, "docs", "DEVELOPING.md"))
	actual := goListArrows(t, root)
	for pkg, imports := range actual {
		want, listed := declared[pkg]
		if !listed {
			t.Errorf("docs/DEVELOPING.md's package list lacks %s (it imports %v)", pkg, imports)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(want, imp) {
				t.Errorf("%s imports %s: docs/DEVELOPING.md shows no such arrow (add it there, or drop the import)", pkg, imp)
			}
		}
		for _, imp := range want {
			if !slices.Contains(imports, imp) {
				t.Errorf("docs/DEVELOPING.md shows %s ─► %s, but %s does not import it", pkg, imp, pkg)
			}
		}
	}
	for pkg := range declared {
		if _, ok := actual[pkg]; !ok {
			t.Errorf("docs/DEVELOPING.md lists %s, which is not a package with non-test files", pkg)
		}
	}
}

// listedArrows parses lines "pkg ─► a, b, c   what it is" (a package
// importing nothing of the module has no arrow).
func listedArrows(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arrows := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "<!-- packages:begin -->"):
			in = true
			continue
		case strings.Contains(line, "<!-- packages:end -->"):
			in = false
		}
		if !in || strings.HasPrefix(line, "```") || strings.TrimSpace(line) == "" {
			continue
		}
		pkg, rest, _ := strings.Cut(line, "─►")
		fields := strings.Fields(pkg)
		arrows[fields[0]] = nil
		if rest == "" {
			continue
		}
		list, _, _ := strings.Cut(strings.TrimSpace(rest), "  ")
		for imp := range strings.SplitSeq(list, ",") {
			arrows[fields[0]] = append(arrows[fields[0]], strings.TrimSpace(imp))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(arrows) == 0 {
		t.Fatal("docs/DEVELOPING.md has no package list between <!-- packages:begin --> and <!-- packages:end -->")
	}
	return arrows
}

// goListArrows returns each package with non-test files and what it imports
// of the module, paths relative to the module.
func goListArrows(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{if .GoFiles}}{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{end}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	arrows := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module+"/")
		arrows[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				arrows[pkg] = append(arrows[pkg], rel)
			}
		}
	}
	return arrows
}
