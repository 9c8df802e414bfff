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

// runbookSteps are the usersync commands and SQL statements that
// docs/operations.md's alert runbook (its Check and Do paragraphs) and its
// troubleshooting table tell an operator to run.
func runbookSteps(t *testing.T) (commands, sqls []string) {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var paragraphs []string
	var inRunbook, inTable, inCheck, inSQL bool
	var sql strings.Builder
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			inRunbook, inTable = line == "## Alert runbook", line == "## Troubleshooting"
			continue
		case inRunbook && line == "```sql":
			inSQL = true
			continue
		case inSQL && line == "```":
			inSQL = false
			sqls = append(sqls, sql.String())
			sql.Reset()
			continue
		case inSQL:
			sql.WriteString(line + "\n")
			continue
		}
		inCheck = inRunbook && (strings.HasPrefix(line, "**Check**") || strings.HasPrefix(line, "**Do**") || (inCheck && line != ""))
		if inCheck || (inTable && strings.HasPrefix(line, "| ")) {
			paragraphs = append(paragraphs, line)
		}
	}
	text := strings.Join(paragraphs, " ")
	for _, m := range regexp.MustCompile("`(usersync [^`]+)`").FindAllStringSubmatch(text, -1) {
		commands = append(commands, m[1])
	}
	for _, m := range regexp.MustCompile("`((?:SELECT|UPDATE) [^`]+)`").FindAllStringSubmatch(text, -1) {
		sqls = append(sqls, m[1])
	}
	if len(commands) < 10 || len(sqls) < 3 {
		t.Fatalf("found %d commands and %d statements in the runbook: the test no longer finds them", len(commands), len(sqls))
	}
	seen := map[string]bool{}
	commands = slices.DeleteFunc(commands, func(c string) bool { defer func() { seen[c] = true }(); return seen[c] })
	return commands, sqls
}

// TestRunbookCommandsRun runs every usersync command and SQL statement of
// the runbook, as written (placeholders filled in: NAME the account eu, ID
// one of its jobs, usersync. and <schema> the warehouse schema), against a
// fleet of the default account and eu, each synced, on the simulator: each
// command exists, takes its flags and succeeds, and each statement runs.
// Only auth login (interactive; its own tests run it) is left out, and the
// commands that remove the account run last.
func TestRunbookCommandsRun(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	if err := f.sim.UpdateKnobs(func(k *apisim.Knobs) { k.RateLimit = 100_000 }); err != nil { // the headers check's
		t.Fatal(err)
	}
	_, euURL := f.simulator(t, 11, 30)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", schematest.NewSchemaName(t, f.pool),
		"--api-token-file", f.secretFile(t, "eu.token", "eu-token-0123456789"))
	f.mustRun(t, "sync", "--full")
	f.mustRun(t, "sync", "--account", "eu")
	f.mustRun(t, "backfill", "--account", "eu")
	job := strconv.Itoa(f.count(t, `SELECT max(id) FROM "`+f.env["USERSYNC_SCHEMA"]+`_river".river_job`))
	if _, err := f.pool.Exec(context.Background(), `CREATE ROLE eu_reader`); err == nil {
		t.Cleanup(func() { _, _ = f.pool.Exec(context.Background(), `DROP ROLE IF EXISTS eu_reader`) })
	}

	commands, sqls := runbookSteps(t)
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
	for _, c := range commands {
		if strings.HasPrefix(c, "usersync auth login") {
			continue
		}
		line := strings.NewReplacer("[--json]", "", "[--account NAME]", "", "NAME", "eu", " ID", " "+job).Replace(c)
		args := strings.Fields(line)[1:]
		if args[len(args)-1] == "--since" {
			args = append(args, "2026-01-01")
		}
		if slices.Contains(args, "--drop-data") {
			args = append(args, "--yes")
		}
		t.Logf("usersync %s", strings.Join(args, " "))
		code, out, errs := run(t, f.env, args...)
		if code != ExitOK {
			t.Errorf("the runbook's `%s` (run as usersync %s): exit %d\n%s%s", c, strings.Join(args, " "), code, out, errs)
		}
	}
	schemaName := `"` + f.env["USERSYNC_SCHEMA"] + `"`
	for _, q := range sqls {
		q = strings.NewReplacer("usersync.", schemaName+".", "<schema>.", schemaName+".", "<blocking>", "0").Replace(q)
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
