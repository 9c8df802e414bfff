package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/usersync/usersync/schema"
)

func schemaCommand() command {
	return command{
		name:    "schema",
		summary: "print the warehouse's tables and columns with their meanings, as text, Markdown or a dbt sources.yml",
		details: `--format dbt prints a dbt sources.yml for USERSYNC_SCHEMA: every table and view
analysts read, with the catalog's meanings; unique and not_null tests on keys, composite keys
and one open version per id; relationships and accepted_values tests; personal-data columns
marked (meta personal_data, tag pii) as the personal-data policy stores them; and freshness
from the last successful sync, warning after two of USERSYNC_SYNC_SCHEDULE's longest intervals
and failing after six. The source is named for USERSYNC_SCHEMA. --dbt-version takes what
dbt --version prints (or major.minor) and picks the form that version reads: 1.10.8 and later
(the default) freshness on every table through loaded_at_query and the tests' arguments under
arguments; 1.9.5 to 1.10.7 freshness on sync_runs under config; 1.8.0 to 1.9.4 freshness on
sync_runs at the top level. --all-accounts prints instead a source over the views that unite
every account (<USERSYNC_SCHEMA>_all), each table with an account column first, and each
account's freshness held to its own schedule (read from the registry). --snapshots DEST prints
instead a sources.yml for dbt-duckdb over the Parquet snapshots in DEST (the folder or s3:// URL
as DuckDB reaches it): the tables snapshots hold, each with meta.external_location reading its
stable path DEST/<USERSYNC_SCHEMA>/<table>/current/*.parquet, the same tests, and no freshness.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			format := fs.String("format", "text", "text, markdown or dbt (a sources.yml)")
			dbtVersion := fs.String("dbt-version", "", "with --format dbt: the dbt version the sources.yml is for, as dbt --version prints it (1.8.0 or later; default: the newest form)")
			all := fs.Bool("all-accounts", false, "with --format dbt: a source over the views uniting every account (<USERSYNC_SCHEMA>_all)")
			snapshots := fs.String("snapshots", "", "with --format dbt: a dbt-duckdb source over the Parquet snapshots in this folder or s3:// URL, at their stable paths")
			return func(ctx context.Context, e *env, _ []string) error {
				if *snapshots != "" && *format != "dbt" {
					return usageError{fmt.Errorf("--snapshots goes with --format dbt")}
				}
				switch *format {
				case "text":
					printSchemaText(e.stdout, e.cfg.Schema)
				case "markdown":
					fmt.Fprint(e.stdout, SchemaMarkdown(e.cfg.Schema))
				case "dbt":
					return printDBT(ctx, e, *dbtVersion, *all, *snapshots)
				default:
					return usageError{fmt.Errorf("--format must be text, markdown or dbt, not %q", *format)}
				}
				return nil
			}
		},
	}
}

// printDBT prints the dbt sources.yml the flags ask for: the warehouse's,
// the union views' (all) or the snapshots' (snapshots, a destination).
func printDBT(ctx context.Context, e *env, dbtVersion string, all bool, snapshots string) error {
	form, err := parseDBTVersion(dbtVersion)
	if err != nil {
		return usageError{err}
	}
	var out string
	switch {
	case all && snapshots != "":
		return usageError{fmt.Errorf("--all-accounts and --snapshots cannot be combined")}
	case snapshots != "":
		out, err = dbtSnapshotSources(e.cfg.Schema, snapshots, form, e.cfg.PII)
	case all:
		out, err = dbtAllAccountsOf(ctx, e, form)
	default:
		out, err = dbtSources(e.cfg.Schema, e.cfg.SyncSchedule, e.cfg.ScheduleMinInterval, form, e.cfg.PII)
	}
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, out)
	return nil
}

func printSchemaText(w io.Writer, schemaName string) {
	for _, t := range schema.Tables() {
		kind := "table"
		if t.View {
			kind = "view"
		}
		fmt.Fprintf(w, "%s %s.%s: %s\n", kind, schemaName, t.Name, t.Meaning)
		for _, c := range t.Columns {
			null := ""
			if !c.Nullable {
				null = " not null"
			}
			fmt.Fprintf(w, "  %-40s %-12s%s\n      %s\n", c.Name, c.Type, null, c.Meaning)
		}
		fmt.Fprintln(w)
	}
}

// SchemaMarkdown renders every table and view of the warehouse, with each
// column's type, nullability and meaning, from the catalog.
func SchemaMarkdown(schemaName string) string {
	var b strings.Builder
	for _, t := range schema.Tables() {
		kind := "table"
		if t.View {
			kind = "view"
		}
		fmt.Fprintf(&b, "### `%s.%s` (%s)\n\n%s\n\n| Column | Type | Null | Meaning |\n|---|---|---|---|\n", schemaName, t.Name, kind, t.Meaning)
		for _, c := range t.Columns {
			null := "no"
			if c.Nullable {
				null = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, c.Type, null, strings.ReplaceAll(c.Meaning, "|", `\|`))
		}
		b.WriteString("\n")
	}
	return b.String()
}
