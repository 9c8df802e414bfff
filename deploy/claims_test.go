package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/usersync/usersync/cmd/usersync/cli"
	"github.com/usersync/usersync/jobs/fleet/config"
)

// claimDocs are the texts whose names of code are checked: the README, every
// doc under docs/ and (added by TestDocClaims) every package comment.
func claimDocs(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range paths {
		out = append(out, strings.TrimPrefix(p, root+string(filepath.Separator)))
	}
	return out
}

// code is what the module holds, for checking the names the docs give.
type code struct {
	files    []string        // every file under the root, slash-separated
	declared map[string]bool // every Go name declared: funcs, methods, types, fields, consts, vars
	source   string          // the sources (tests too) but the docs, where a metric, table, role or variable is named
	targets  map[string]bool // the Makefile's targets
	commands map[string]bool // usersync's commands
	packages map[string]string
}

// TestDocClaims: every file, make target, Go name, usersync command,
// variable and usersync_ name that the README, docs/*.md and the package
// comments give in backticks (package comments: by path or pkg.Name) exists.
// A claim whose code is renamed or deleted fails here instead of misleading.
func TestDocClaims(t *testing.T) {
	t.Parallel()
	c := loadCode(t)
	for _, doc := range claimDocs(t) {
		for _, tok := range backticked(readFile(t, doc)) {
			if why := c.check(tok); why != "" {
				t.Errorf("%s: `%s` %s", doc, tok, why)
			}
		}
	}
	for pkg, comment := range c.packages {
		for _, tok := range commentNames.FindAllString(comment, -1) {
			tok = strings.TrimRight(tok, ".,;:)")
			if why := c.check(tok); why != "" {
				t.Errorf("package comment of %s: %s %s", pkg, tok, why)
			}
		}
	}
}

// commentNames are what a package comment names plainly: a path with a
// slash and an extension, or pkg.Name.
var commentNames = regexp.MustCompile(`\b(?:[a-z][\w-]*/)+[\w.-]+\.(?:go|sql|md|yaml|yml|sh)\b|\b[a-z]+\.[A-Z]\w*(?:\.[A-Z]\w*)?`)

var fence = regexp.MustCompile("(?s)\n```.*?\n```")

// backticked returns the inline code spans of a Markdown text, fenced blocks
// left out (TestDocCommands reads those).
func backticked(md string) []string {
	md = fence.ReplaceAllString(md, "\n")
	var out []string
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(md, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

var (
	// pathLike: a path under one of the repository's top-level folders, or a
	// file name with an extension of the repository's.
	pathLike   = regexp.MustCompile(`^(?:\./)?(?:cmd|sync|schema|jobs|deploy|docs|bench|\.ci|\.github)(?:/[\w.-]+)*/?$|^[\w-]+\.(?:go|sql|md|sh)$`)
	makeTarget = regexp.MustCompile(`^make ([a-z][\w-]*)`)
	command    = regexp.MustCompile(`^usersync ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?`)
	metricLike = regexp.MustCompile(`^usersync_[a-z0-9_]+|^Usersync[A-Z]\w+$`) // a metric, table, role or alert
	goName     = regexp.MustCompile(`^[A-Za-z]\w*(?:\.[A-Z]\w*)+(?:\(\))?$|^[A-Za-z][A-Za-z0-9]*\(\)$|^(?:Test|Benchmark|Fuzz)[A-Z]\w*(?:/\S+)?$`)
	variable   = regexp.MustCompile(`^(?:USERSYNC_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL(?:_FILE)?)(?:=.*)?$`)
)

// check says why tok names nothing that exists, or "" when it does (or is
// not a name of code at all).
func (c *code) check(tok string) string {
	switch {
	case strings.ContainsAny(tok, "<>{}*…$ ") && !makeTarget.MatchString(tok) && !command.MatchString(tok):
		return "" // a pattern or an example, not one name
	case strings.Contains(tok, "://"):
		return ""
	case makeTarget.MatchString(tok):
		if !c.targets[makeTarget.FindStringSubmatch(tok)[1]] {
			return "is not a target of the Makefile"
		}
	case command.MatchString(tok):
		m := command.FindStringSubmatch(tok)
		if !c.commands[m[1]] && !c.commands[m[1]+" "+m[2]] {
			return "is not a usersync command"
		}
	case variable.MatchString(tok):
		name, _, _ := strings.Cut(tok, "=")
		knob := `"` + strings.TrimPrefix(name, "USERSYNC_BENCH_") + `"` // the bench's knobs are read by suffix
		if !slices.Contains(config.EnvNames(), name) && !strings.Contains(c.source, name) && !strings.Contains(c.source, knob) {
			return "is neither a variable usersync reads nor one its tools do"
		}
	case pathLike.MatchString(tok):
		return c.checkPath(tok)
	case metricLike.MatchString(tok):
		name := metricLike.FindString(tok)
		derived := strings.Contains(c.source, `"`+strings.TrimPrefix(name, "usersync")+`"`) // <schema>_river
		if !strings.Contains(c.source, name) && !derived {
			return "is named nowhere in the code, SQL or deploy files"
		}
	case goName.MatchString(tok):
		return c.checkGoName(tok)
	}
	return ""
}

// checkPath accepts a path that exists from the root, or that ends a path
// that does (a doc naming a file relative to its package).
func (c *code) checkPath(p string) string {
	p = strings.TrimPrefix(strings.TrimSuffix(p, "/"), "./")
	if _, err := os.Stat(filepath.Join(root, p)); err == nil || strings.HasPrefix(filepath.Base(p), ".env") {
		return "" // .env: the file the operator writes
	}
	for _, f := range c.files {
		if strings.HasSuffix(f, "/"+p) || strings.Contains(f, "/"+p+"/") {
			return ""
		}
	}
	return "is no file or folder of the repository"
}

// checkGoName accepts pkg.Name, Type.Method and Name() when each capitalised
// part is declared in the module (the package part is a module package).
func (c *code) checkGoName(tok string) string {
	tok, _, _ = strings.Cut(strings.TrimSuffix(tok, "()"), "/") // a subtest is its test's
	for i, part := range strings.Split(tok, ".") {
		if i == 0 && part[0] >= 'a' && part[0] <= 'z' && strings.Contains(tok, ".") {
			if _, ok := c.packages[part]; !ok {
				return "" // another package's name (http.Client, slog.Logger): not ours to check
			}
			continue
		}
		if !c.declared[part] {
			return "names " + part + ", declared nowhere in the module"
		}
	}
	return ""
}

func loadCode(t *testing.T) *code {
	t.Helper()
	c := &code{declared: map[string]bool{}, targets: map[string]bool{}, commands: map[string]bool{}, packages: map[string]string{}}
	var src strings.Builder
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			c.files = append(c.files, rel)
			return nil
		}
		c.files = append(c.files, rel)
		switch ext := filepath.Ext(path); {
		case ext == ".go":
			return c.addGo(fset, path, &src)
		case ext == ".sql" || ext == ".yaml" || ext == ".yml" || ext == ".json" || ext == ".sh" || d.Name() == "Makefile":
			b, err := os.ReadFile(path)
			src.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.source = src.String()
	for _, m := range regexp.MustCompile(`(?m)^([a-z][\w-]*):`).FindAllStringSubmatch(readFile(t, "Makefile"), -1) {
		c.targets[m[1]] = true
	}
	for name := range cli.CommandFlags() {
		c.commands[name] = true
		group, _, _ := strings.Cut(name, " ")
		c.commands[group] = true
	}
	c.commands["help"] = true
	return c
}

// addGo records the names a Go file declares, its text when it is not a
// test, and its package comment.
func (c *code) addGo(fset *token.FileSet, path string, src *strings.Builder) error {
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	src.Write(b)
	if !strings.HasSuffix(path, "_test.go") {
		if f.Doc != nil {
			c.packages[f.Name.Name] += f.Doc.Text()
		} else if _, ok := c.packages[f.Name.Name]; !ok {
			c.packages[f.Name.Name] = ""
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			c.declared[n.Name.Name] = true
		case *ast.TypeSpec:
			c.declared[n.Name.Name] = true
		case *ast.ValueSpec:
			for _, id := range n.Names {
				c.declared[id.Name] = true
			}
		case *ast.Field:
			for _, id := range n.Names {
				c.declared[id.Name] = true
			}
		}
		return true
	})
	return nil
}
