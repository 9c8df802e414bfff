package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
)

func migrateCommand() command {
	return command{
		name:    "migrate",
		summary: "create or upgrade the warehouse tables and River's job tables",
		details: `Applies the pending warehouse migrations to USERSYNC_SCHEMA and River's migrations
to <schema>_river, refreshes the column comments, and grants USERSYNC_READER_ROLE
read access to the analysts' tables. Safe to run again and from several
processes at once: an advisory lock serializes them.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, _ []string) error {
				pool, err := openPool(ctx, e, 4)
				if err != nil {
					return err
				}
				defer pool.Close()
				var res warehouse.MigrateResult
				var river []int
				var accountLines []string
				err = warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
					var err error
					res, err = warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: e.cfg.Schema, ReaderRole: e.cfg.ReaderRole})
					if err != nil {
						return err
					}
					if err := registry.CommentPolicyColumns(ctx, pool, e.cfg); err != nil {
						return err
					}
					if river, err = jobs.MigrateRiver(ctx, pool, jobs.RiverSchema(e.cfg.Schema), quietLogger(e)); err != nil {
						return err
					}
					f, err := registry.New(pool, e.cfg, e.getenv, e.logger)
					if err != nil {
						return err
					}
					accountLines, err = f.Migrate(ctx)
					return err
				})
				if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
					return usageError{fmt.Errorf("USERSYNC_READER_ROLE %s is the migrating user or a role it belongs to; give analysts a role of their own, or set it empty to skip the grants", e.cfg.ReaderRole)}
				}
				if err != nil {
					return fmt.Errorf("migrating: %w", err)
				}
				printMigrateResult(e, res, river)
				for _, l := range accountLines {
					fmt.Fprintln(e.stdout, l)
				}
				return nil
			}
		},
	}
}

func printMigrateResult(e *env, res warehouse.MigrateResult, river []int) {
	w := e.stdout
	if len(res.Applied) == 0 {
		fmt.Fprintf(w, "schema %s is up to date (version %d)\n", e.cfg.Schema, res.Current)
	} else {
		fmt.Fprintf(w, "schema %s migrated to version %d (applied %v)\n", e.cfg.Schema, res.Current, res.Applied)
		for _, t := range schema.Tables() {
			kind := "table"
			if t.View {
				kind = "view "
			}
			fmt.Fprintf(w, "  %s %s.%s (%d columns)\n", kind, e.cfg.Schema, t.Name, len(t.Columns))
		}
	}
	if len(river) > 0 {
		fmt.Fprintf(w, "River schema %s: applied migrations %v\n", jobs.RiverSchema(e.cfg.Schema), river)
	} else {
		fmt.Fprintf(w, "River schema %s is up to date\n", jobs.RiverSchema(e.cfg.Schema))
	}
	if e.cfg.ReaderRole != "" && len(res.Notices) == 0 {
		fmt.Fprintf(w, "role %s may read the analysts' tables\n", e.cfg.ReaderRole)
	}
	for _, n := range res.Notices {
		fmt.Fprintf(w, "notice: %s\n", n)
	}
}

// quietLogger passes only warnings and errors of a library's logger on,
// unless the operator asked for debug logs.
func quietLogger(e *env) *slog.Logger {
	if e.cfg.LogLevel == "debug" {
		return e.logger
	}
	return slog.New(discardBelow{e.logger.Handler(), slog.LevelWarn})
}

type discardBelow struct {
	slog.Handler
	min slog.Level
}

func (d discardBelow) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= d.min && d.Handler.Enabled(ctx, l)
}
