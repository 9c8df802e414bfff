package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/usersync/usersync/jobs/fleet/registry"
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
				var schema string
				var changed bool
				err := withFleet(ctx, e, 2, func(f *registry.Fleet) (err error) {
					schema, changed, err = f.Views(ctx)
					return err
				})
				if err != nil {
					return err
				}
				what := "already current"
				if changed {
					what = "remade"
				}
				fmt.Fprintf(e.stdout, "union views in schema %s: %s\n", schema, what)
				return nil
			}
		},
	}
}
