// Package codesize holds the size limits of the module's code as a test:
// no file over 400 lines and no function over 60, except the data tables
// and generated code listed below. Tests (_test.go files) are not held to
// them.
package codesize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxFileLines = 400
	maxFuncLines = 60
)

// dataTables are functions that are one table of data, read best whole; the
// key is the path from the module's root and the function's name.
var dataTables = map[string]string{
	"sync/apisim/generate.go:customizeAttr":      "one case per catalog attribute: its null rate, stability and value rule",
	"jobs/fleet/config/settings.go:baseSettings": "the settings table: one row per setting",
	"schema/resources.go:User":                   "the catalog's user attributes, one row each",
	"schema/bookkeeping.go:bookkeepingTables":    "the bookkeeping tables' columns, one row each",
}

func TestSizes(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, over %d: split it by concern", rel, n, maxFileLines)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := rel + ":" + fn.Name.Name
			if _, ok := dataTables[key]; ok {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %d lines, over %d", key, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSizesSeeLongFunctions keeps TestSizes from passing because it walks
// nothing: the exempted table exists and is over the limit.
func TestSizesSeeLongFunctions(t *testing.T) {
	path := filepath.Join("..", "..", "apisim", "generate.go")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == "customizeAttr" {
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n <= maxFuncLines {
				t.Errorf("customizeAttr is %d lines: drop it from dataTables", n)
			}
			return
		}
	}
	t.Error("customizeAttr not found: drop it from dataTables")
}
