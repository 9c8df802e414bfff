package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

func accountsSetCommand() command {
	return command{
		name:    "accounts set",
		summary: "change an account's settings (a rotated token, a schedule); its schema stays",
		args:    "NAME [flags]",
		details: `Sets the account-scoped settings given, as accounts add takes them (secrets
only from their files, stored encrypted; --pii-key-file or --pii-key-env for where the
PII key is, which removes a PII key an earlier release stored in the database, once
it is the same key), checked with the account's other settings; the others stay. The schema never changes. A running
worker uses the new values from its next run of the account. A new --reader-role is
granted the account's tables at once, and the role it replaces loses its access to
the account's schema (not to others).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			files := secretFileFlags(fs)
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName("set", args)
				if err != nil {
					return err
				}
				vals, sources, err := givenValues(fs, files)
				if err != nil {
					return usageError{err}
				}
				if _, ok := vals[accounts.SchemaSetting]; ok {
					return usageError{errors.New("--schema: an account's schema never changes; add a new account for another schema")}
				}
				if len(vals) == 0 {
					return usageError{errors.New("give a setting to change (usersync accounts set -h lists them)")}
				}
				return withFleet(ctx, e, 4, func(f *registry.Fleet) error {
					res, err := f.Set(ctx, name, vals, sources)
					if err != nil {
						return err
					}
					printSet(e.stdout, name, res)
					return nil
				})
			}
		},
	}
}

// printSet says what accounts set changed.
func printSet(w io.Writer, name string, res registry.SetResult) {
	fmt.Fprintf(w, "account %s: %d setting(s) changed\n", name, res.Changed)
	if !res.RoleChanged {
		return
	}
	if res.OldRole != "" {
		fmt.Fprintf(w, "account %s: role %s may no longer read schema %s\n", name, res.OldRole, res.Schema)
	}
	if res.NewRole != "" && len(res.Notices) == 0 {
		fmt.Fprintf(w, "account %s: role %s may read the analysts' tables of schema %s\n", name, res.NewRole, res.Schema)
	}
	for _, n := range res.Notices {
		fmt.Fprintf(w, "account %s: notice: %s\n", name, n)
	}
}
