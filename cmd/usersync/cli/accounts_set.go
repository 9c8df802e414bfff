package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/usersync/usersync/sync/warehouse/accounts"
)

func accountsSetCommand() command {
	return command{
		name:    "accounts set",
		summary: "change an account's settings (a rotated token, a schedule); its schema stays",
		args:    "NAME [flags]",
		details: `Sets the account-scoped settings given, as accounts add takes them, but secrets
only from their files (--api-token-file and the like: the environment here may hold
the default account's), checked with the account's other settings; the others stay. The schema never changes. A running
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
				vals, sources, err := givenValues(e, fs, files, false)
				if err != nil {
					return usageError{err}
				}
				if _, ok := vals[accounts.SchemaSetting]; ok {
					return usageError{errors.New("--schema: an account's schema never changes; add a new account for another schema")}
				}
				if len(vals) == 0 {
					return usageError{errors.New("give a setting to change (usersync accounts set -h lists them)")}
				}
				return withRegistry(ctx, e, func(reg *accounts.Registry) error {
					a, err := reg.Get(ctx, name)
					if err := mends(err, vals); err != nil {
						return notFound(name, err)
					}
					merged := map[string]string{}
					for k, v := range a.Settings {
						merged[k] = v
					}
					for k, v := range vals {
						merged[k] = v
					}
					cfg, err := accountConfig(e.cfg, name, merged, sources)
					if err != nil {
						return usageError{err}
					}
					if err := cfg.requireAPI(); err != nil {
						return usageError{fmt.Errorf("account %s: %w", name, err)}
					}
					if c, ok := changedReaderRole(e, a, vals, cfg.ReaderRole); ok {
						return setReaderRole(ctx, e, reg, a, vals, c)
					}
					if err := reg.UpdateSettings(ctx, name, vals); err != nil {
						return notFound(name, err)
					}
					fmt.Fprintf(e.stdout, "account %s: %d setting(s) changed\n", name, len(vals))
					return nil
				})
			}
		},
	}
}

// mends returns nil when Get's err is nil, or says a row whose stored
// settings are not all strings (accounts.SettingsError) and vals sets each
// of those again: only then is the row whole once vals is stored.
func mends(err error, vals map[string]string) error {
	var bad *accounts.SettingsError
	if !errors.As(err, &bad) {
		return err
	}
	missing := slices.DeleteFunc(slices.Clone(bad.Keys), func(k string) bool { _, ok := vals[k]; return ok })
	if len(missing) > 0 || bad.Keys == nil {
		return usageError{fmt.Errorf("%w; this command must give %s too, to mend the row", bad, strings.Join(missing, ", "))}
	}
	return nil
}
