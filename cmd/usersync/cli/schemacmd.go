package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/dbt"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse/accounts"
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
					schema.WriteText(e.stdout, e.cfg.Schema)
				case "markdown":
					fmt.Fprint(e.stdout, schema.Markdown(e.cfg.Schema))
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
func printDBT(ctx context.Context, e *env, version string, all bool, snapshots string) error {
	form, err := dbt.ParseVersion(version)
	if err != nil {
		return usageError{err}
	}
	opt := dbt.Options{Form: form, Personal: dbt.Personal(e.cfg.PII.HashedColumns(), e.cfg.PII.DroppedColumns())}
	var out string
	switch {
	case all && snapshots != "":
		return usageError{fmt.Errorf("--all-accounts and --snapshots cannot be combined")}
	case snapshots != "":
		if err := snapshot.CheckDestination(snapshots); err != nil {
			return fmt.Errorf("--snapshots: %w", err)
		}
		out, err = dbt.SnapshotSources(e.cfg.Schema, snapshots, opt)
	case all:
		out, err = dbtAllAccounts(ctx, e, form)
	default:
		sched, perr := jobs.ParseSchedule("USERSYNC_SYNC_SCHEDULE", e.cfg.SyncSchedule, e.cfg.ScheduleMinInterval)
		if perr != nil {
			return perr
		}
		opt.Every = dbt.ScheduleInterval(sched)
		out, err = dbt.Sources(e.cfg.Schema, e.cfg.SyncSchedule, opt)
	}
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, out)
	return nil
}

// dbtAllAccounts renders the dbt sources.yml of the union views of the
// fleet e runs in, with the registered accounts' schedules and policies.
func dbtAllAccounts(ctx context.Context, e *env, form dbt.Form) (string, error) {
	pool, err := openPool(ctx, e, 2)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	list, err := loadAccounts(ctx, e, pool)
	if err != nil {
		return "", fmt.Errorf("reading the accounts: %w", err)
	}
	var paces []dbt.AccountPace
	var personal []map[string]string
	for _, a := range list {
		if a.Err != nil {
			return "", fmt.Errorf("account %s: %w", a.Name, a.Err)
		}
		sched, err := jobs.ParseSchedule("account "+a.Name+": USERSYNC_SYNC_SCHEDULE", a.Cfg.SyncSchedule, a.Cfg.ScheduleMinInterval)
		if err != nil {
			return "", err
		}
		if every := dbt.ScheduleInterval(sched); every > 0 && !a.Paused {
			paces = append(paces, dbt.AccountPace{Name: a.Name, Every: every})
		}
		personal = append(personal, dbt.Personal(a.Cfg.PII.HashedColumns(), a.Cfg.PII.DroppedColumns()))
	}
	fleet := e.fleetConfig().Schema
	return dbt.AllAccounts(fleet, accounts.UnionSchema(fleet), dbt.Options{Form: form, Personal: dbt.MergePersonal(personal)}, paces)
}
