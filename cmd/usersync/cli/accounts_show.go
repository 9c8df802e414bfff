package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

func accountsShowCommand() command {
	return command{
		name:    "accounts show",
		summary: "show an account: schema, paused, and each account-scoped setting (secrets as set)",
		args:    "NAME",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName("show", args)
				if err != nil {
					return err
				}
				return withFleet(ctx, e, 2, func(f *registry.Fleet) error {
					a, err := f.Reg.Get(ctx, name)
					if err != nil && !errors.Is(err, accounts.ErrBadSettings) {
						return registry.NotFound(name, err)
					}
					out := struct {
						accountLine
						Settings []registry.SettingValue `json:"settings"`
					}{lineOf(a), f.Settings(a)}
					if *asJSON {
						return writeJSON(e.stdout, out)
					}
					printAccount(e.stdout, out.accountLine, out.Settings)
					return nil
				})
			}
		},
	}
}

func printAccount(w io.Writer, a accountLine, settings []registry.SettingValue) {
	paused := "no"
	if a.PausedAt != nil {
		paused = "since " + a.PausedAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "account      %s\nschema       %s\npaused       %s\ncreated      %s\nupdated      %s\n\n",
		a.Name, a.Schema, paused, a.CreatedAt.Format(time.RFC3339), a.UpdatedAt.Format(time.RFC3339))
	if a.Problem != "" {
		fmt.Fprintf(w, "problem      %s\n\n", a.Problem)
	}
	for _, l := range settings {
		v := l.Value
		if v == "" {
			v = "(empty)"
		}
		fmt.Fprintf(w, "  %-34s %-8s %s\n", l.Setting, l.From, v)
	}
}
