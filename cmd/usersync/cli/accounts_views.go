package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

func accountsViewsCommand() command {
	return command{
		name:    "accounts views",
		summary: "remake the union views of every account now, unless they are current",
		details: `Remakes the views that unite every account's analysts' tables
(<USERSYNC_SCHEMA>_all), as accounts add does unless given --no-views, and as a
running worker does at its fleet tick once the registered accounts changed. It
does nothing when the views are those of the accounts already. For a deployment
that registers many accounts with accounts add --no-views and has no worker
running yet.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("usersync accounts views takes no argument, not %q", args[0])}
				}
				var u accounts.Union
				var changed bool
				err := withRegistryPool(ctx, e, func(pool *pgxpool.Pool, reg *accounts.Registry) (err error) {
					u = fleetUnion(e, reg)
					changed, err = u.Refresh(ctx, pool)
					return err
				})
				if err != nil {
					return err
				}
				what := "already current"
				if changed {
					what = "remade"
				}
				fmt.Fprintf(e.stdout, "union views in schema %s: %s\n", u.Schema, what)
				return nil
			}
		},
	}
}
