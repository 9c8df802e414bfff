package cli

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// runbookMark precedes each fenced block of docs/operations.md whose lines
// the runbook tells an operator to run.
const runbookMark = "<!-- runbook -->"

// runbookBlock is one marked block: its language and its lines.
type runbookBlock struct {
	lang  string
	line  int // of the opening fence, 1-based
	lines []string
}

// runbookBlocks returns the marked blocks of a Markdown text. A mark not
// followed by a fence is an error, so a block cannot drop out unnoticed.
func runbookBlocks(t *testing.T, md string) []runbookBlock {
	t.Helper()
	var out []runbookBlock
	var cur *runbookBlock
	marked := false
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case strings.TrimSpace(line) == runbookMark:
			marked = true
		case marked && strings.HasPrefix(line, "```"):
			cur, marked = &runbookBlock{lang: strings.TrimPrefix(line, "```"), line: i + 1}, false
		case marked && strings.TrimSpace(line) != "":
			t.Errorf("docs/operations.md:%d: %s is not followed by a fenced block", i+1, runbookMark)
			marked = false
		}
	}
	return out
}

// runbookSteps splits the marked blocks into usersync commands (without
// their comments, first seen first) and SQL statements. A line of a shell
// block that is not a usersync command fails the test: the runbook holds
// only what this test runs.
func runbookSteps(t *testing.T, md string) (commands, sqls []string) {
	t.Helper()
	for _, b := range runbookBlocks(t, md) {
		switch b.lang {
		case "sh":
			for _, line := range b.lines {
				line, _, _ = strings.Cut(line, " #")
				line = strings.TrimSpace(line)
				switch {
				case line == "" || strings.HasPrefix(line, "#"):
				case strings.HasPrefix(line, "usersync "):
					if !slices.Contains(commands, line) {
						commands = append(commands, line)
					}
				default:
					t.Errorf("docs/operations.md:%d: the runbook block holds %q, which is no usersync command: move it out of the block, which this test runs", b.line, line)
				}
			}
		case "sql":
			for _, s := range strings.Split(strings.Join(b.lines, "\n"), ";") {
				if s = strings.TrimSpace(s); s != "" {
					sqls = append(sqls, s)
				}
			}
		default:
			t.Errorf("docs/operations.md:%d: a runbook block is sh or sql, not %q", b.line, b.lang)
		}
	}
	return commands, sqls
}

// shellWords splits a command line as a shell would for what the runbook
// writes: words, and single- or double-quoted strings.
func shellWords(line string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`'([^']*)'|"([^"]*)"|(\S+)`).FindAllStringSubmatch(line, -1) {
		out = append(out, m[1]+m[2]+m[3])
	}
	return out
}

// TestRunbookCommandsRun runs every command and SQL statement of the
// runbook blocks of docs/operations.md, as written (ACCOUNT the account eu,
// JOB_ID one of its jobs, SCHEMA the warehouse schema, PID no session),
// against a fleet of the default account and eu, each synced, on the
// simulator: each command exists, takes its flags and exits 0, and each
// statement runs (in a transaction rolled back). The auth commands run
// against a default account that uses OAuth; accounts remove runs last.
func TestRunbookCommandsRun(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	commands, sqls := runbookSteps(t, string(doc))
	if len(commands) < 15 || len(sqls) < 5 {
		t.Fatalf("found %d commands and %d statements in the runbook blocks: the test no longer finds them", len(commands), len(sqls))
	}
	f := newRegistryFleet(t)
	euSim, euURL := f.simulator(t, 11, 30)
	for _, sim := range []*apisim.Server{f.sim, euSim} { // the budget check reads the rate-limit headers
		if err := sim.UpdateKnobs(func(k *apisim.Knobs) { k.RateLimit = 100_000 }); err != nil {
			t.Fatal(err)
		}
	}
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", schematest.NewSchemaName(t, f.pool),
		"--api-token-file", f.secretFile(t, "eu.token", "eu-token-0123456789"))
	f.mustRun(t, "sync", "--full")
	f.mustRun(t, "sync", "--account", "eu")
	f.mustRun(t, "backfill", "--account", "eu")
	job := strconv.Itoa(f.count(t, `SELECT max(id) FROM "`+f.env["USERSYNC_SCHEMA"]+`_river".river_job`))
	if _, err := f.pool.Exec(context.Background(), `CREATE ROLE eu_reader`); err == nil {
		t.Cleanup(func() { _, _ = f.pool.Exec(context.Background(), `DROP ROLE IF EXISTS eu_reader`) })
	}
	oauth := newAuthEnv(t, apisim.Options{Seed: 5, Users: 40}, nil)

	last := func(c string) bool { return strings.Contains(c, "accounts remove") }
	slices.SortStableFunc(commands, func(a, b string) int {
		switch {
		case last(a) && !last(b):
			return 1
		case last(b) && !last(a):
			return -1
		}
		return 0
	})
	fill := strings.NewReplacer("ACCOUNT", "eu", "JOB_ID", job)
	for _, c := range commands {
		args := shellWords(fill.Replace(c))[1:]
		var code int
		var out, errs string
		switch {
		case len(args) > 1 && args[0] == "auth" && args[1] == "login":
			code, out, errs = oauth.login(t, args[2:]...)
		case args[0] == "auth":
			code, out, errs = run(t, oauth.oauth, args...)
		default:
			code, out, errs = run(t, f.env, args...)
		}
		t.Logf("usersync %s: exit %d", strings.Join(args, " "), code)
		if code != ExitOK {
			t.Errorf("the runbook's `%s` (run as usersync %s): exit %d\n%s%s", c, strings.Join(args, " "), code, out, errs)
		}
	}
	schemaName := `"` + f.env["USERSYNC_SCHEMA"] + `"`
	sqlFill := regexp.MustCompile(`\bSCHEMA\b|\bPID\b`)
	for _, q := range sqls {
		q = sqlFill.ReplaceAllStringFunc(q, func(p string) string {
			if p == "PID" {
				return "0"
			}
			return schemaName
		})
		tx, err := f.pool.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(context.Background(), q); err != nil {
			t.Errorf("the runbook's statement does not run: %v\n%s", err, q)
		}
		_ = tx.Rollback(context.Background()) // a fix the runbook gives is tried, not kept
	}
}

// TestRunbookCoversEveryAlert: each alert of the Prometheus rules has a
// heading under the runbook's Alerts with a runbook block of its own.
func TestRunbookCoversEveryAlert(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile("../../../deploy/monitoring/prometheus-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\w+)`).FindAllStringSubmatch(string(rules), -1)
	if len(alerts) < 8 {
		t.Fatalf("found %d alerts in the rules: the test no longer reads them", len(alerts))
	}
	sections := strings.Split(string(doc), "\n### ")
	for _, a := range alerts {
		i := slices.IndexFunc(sections, func(s string) bool { return strings.HasPrefix(s, a[1]+"\n") })
		if i < 0 {
			t.Errorf("docs/operations.md has no runbook entry (### %s) for the alert %s", a[1], a[1])
		} else if !strings.Contains(sections[i], runbookMark) {
			t.Errorf("docs/operations.md's entry for %s has no %s block of commands", a[1], runbookMark)
		}
	}
}
