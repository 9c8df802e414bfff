package deploy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/cmd/usersync/cli"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// The operator's and analysts' docs, and the README, whose commands are
// checked.
var docs = []string{"README.md", "docs/operations.md", "docs/analysts.md"}

// codeBlock is a fenced block of a Markdown file.
type codeBlock struct {
	lang string
	line int // of the opening fence, 1-based
	text string
}

func codeBlocks(md string) []codeBlock {
	var out []codeBlock
	var cur *codeBlock
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				cur.text += line + "\n"
			}
			continue
		}
		if cur != nil {
			out = append(out, *cur)
			cur = nil
			continue
		}
		lang, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "```"), " ")
		cur = &codeBlock{lang: lang, line: i + 1}
	}
	return out
}

// shellLines returns a block's command lines: continuations joined, prompts
// dropped.
func shellLines(text string) []string {
	var out []string
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, cur+line)
		cur = ""
	}
	return out
}

// TestDocCommands checks every usersync invocation in the docs' shell and
// plain code blocks: the command exists and takes each flag given.
func TestDocCommands(t *testing.T) {
	t.Parallel()
	for _, doc := range docs {
		seen := 0
		for _, b := range codeBlocks(readFile(t, doc)) {
			switch b.lang {
			case "", "sh", "bash", "shell", "console", "text":
			default:
				continue
			}
			for _, line := range shellLines(b.text) {
				for _, args := range shellInvocations(line) {
					seen++
					checkArgs(t, fmt.Sprintf("%s (block at line %d): %s", doc, b.line, strings.TrimSpace(line)), args)
				}
			}
		}
		if seen == 0 && doc == "docs/operations.md" {
			t.Errorf("%s: found no usersync command in its code blocks: is the parser broken?", doc)
		}
	}
}

var docVariable = regexp.MustCompile(`\bUSERSYNC_[A-Z0-9_]*[A-Z0-9]\b[*<]?`)

// TestDocVariables checks that every USERSYNC_ variable the operator's and
// analysts' docs name is one usersync reads.
func TestDocVariables(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"docs/operations.md", "docs/analysts.md"} {
		for _, m := range docVariable.FindAllString(readFile(t, doc), -1) {
			if strings.HasSuffix(m, "*") || strings.HasSuffix(m, "<") {
				continue // a family (USERSYNC_OAUTH_*), not a variable
			}
			checkEnvName(t, doc, m)
		}
	}
}

const (
	schemaBegin = "<!-- schema:begin (generated: make docs) -->"
	schemaEnd   = "<!-- schema:end -->"
)

// TestAnalystsDoc checks the ER diagram names every table analysts read, and
// that the markers of the generated table reference are in place.
func TestAnalystsDoc(t *testing.T) {
	t.Parallel()
	doc := readFile(t, "docs/analysts.md")
	var diagram string
	for _, b := range codeBlocks(doc) {
		if b.lang == "mermaid" && strings.HasPrefix(strings.TrimSpace(b.text), "erDiagram") {
			diagram = b.text
		}
	}
	if diagram == "" {
		t.Fatal("docs/analysts.md has no Mermaid erDiagram")
	}
	for _, tbl := range schema.Tables() {
		if !tbl.Analysts || tbl.View {
			continue
		}
		if !regexp.MustCompile(`(?m)^\s*` + tbl.Name + ` \{`).MatchString(diagram) {
			t.Errorf("docs/analysts.md: the ER diagram has no entity %s", tbl.Name)
		}
	}
	i, j := strings.Index(doc, schemaBegin+"\n"), strings.Index(doc, "\n"+schemaEnd)
	if i < 0 || j < i {
		t.Errorf("docs/analysts.md lacks the lines %q and %q, in that order", schemaBegin, schemaEnd)
	}
}

// TestAnalystsSQL runs every PostgreSQL example of docs/analysts.md against a
// warehouse synced from the simulated API, changed and synced again, so the
// examples cannot rot. Blocks that start with "-- DuckDB" are for DuckDB.
func TestAnalystsSQL(t *testing.T) {
	t.Parallel()
	var stmts []string
	for _, b := range codeBlocks(readFile(t, "docs/analysts.md")) {
		if b.lang != "sql" || strings.HasPrefix(b.text, "-- DuckDB") {
			continue
		}
		for _, s := range strings.Split(b.text, ";") {
			if strings.TrimSpace(withoutComments(s)) != "" {
				stmts = append(stmts, s)
			}
		}
	}
	if len(stmts) < 8 {
		t.Fatalf("docs/analysts.md: found only %d SQL examples", len(stmts))
	}

	sim := apisim.New(apisim.Options{Seed: 11, Users: 400})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "",
		"USERSYNC_API_URL": srv.URL, "USERSYNC_API_TOKEN": "deploy-test-token"}
	run := func(args ...string) {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := cli.Main(context.Background(), args, environOf(env), &stdout, &stderr); code != cli.ExitOK {
			t.Fatalf("usersync %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
	}
	run("migrate")
	run("sync", "--full")
	// The warehouse lives through changes, so the history queries have a
	// past to answer about: the examples' date is replaced by a moment
	// between the two syncs.
	ctx := context.Background()
	var between time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&between); err != nil {
		t.Fatal(err)
	}
	liveThroughChanges(t, sim)
	run("sync")
	run("reconcile")

	for _, stmt := range stmts {
		stmt = strings.ReplaceAll(stmt, "'2026-10-01T00:00:00Z'", "'"+between.UTC().Format(time.RFC3339Nano)+"'")
		n := 0
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL search_path = "`+name+`"`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, stmt)
			if err != nil {
				return err
			}
			for rows.Next() {
				n++
			}
			return rows.Err()
		})
		if err != nil {
			t.Errorf("docs/analysts.md: query failed: %v\n%s", err, strings.TrimSpace(stmt))
		}
		if n == 0 && strings.Contains(stmt, "_versions") && strings.Contains(stmt, between.UTC().Format(time.RFC3339Nano)) {
			t.Errorf("docs/analysts.md: an as-of query found nothing in a warehouse that has a past:\n%s", strings.TrimSpace(stmt))
		}
		t.Logf("%d rows: %s", n, firstLine(withoutComments(stmt)))
	}
}

// liveThroughChanges changes users, memberships, teams and roles the ways
// the history keeps.
func liveThroughChanges(t *testing.T, sim *apisim.Server) {
	t.Helper()
	sim.UpdateUsers(40)
	m := sim.Memberships()
	roles := sim.Roles()
	for _, err := range []error{
		sim.SetMembership(m[0].UserID, m[0].TeamID, false),
		sim.RenameTeam(m[1].TeamID, "Renamed team"),
		sim.RenameRole(roles[2].ID, "Renamed role"),
		sim.SetRoleParent(roles[3].ID, roles[0].ID),
		sim.DeleteTeam(m[len(m)-1].TeamID),
		sim.DeleteUser(m[2].UserID),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func withoutComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// environOf is env in os.Environ's form.
func environOf(env map[string]string) []string {
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	return kv
}
