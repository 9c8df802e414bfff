package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

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
				return withRegistry(ctx, e, func(reg *accounts.Registry) error {
					return setAccount(ctx, e, reg, name, vals, sources)
				})
			}
		},
	}
}

// setAccount stores vals, the settings accounts set was given, over
// account name's, once the whole makes a Config. Where the PII key is
// replaces where it was, and a key the row held (an earlier release's)
// once the new place holds the same key.
func setAccount(ctx context.Context, e *env, reg *accounts.Registry, name string, vals, sources map[string]string) error {
	a, err := reg.Get(ctx, name)
	if err := mends(err, vals); err != nil {
		return notFound(name, err)
	}
	merged := maps.Clone(a.Settings)
	if merged == nil {
		merged = map[string]string{}
	}
	var remove []string
	if vals[piiKeyFile] != "" || vals[piiKeyEnv] != "" {
		remove = []string{"USERSYNC_PII_KEY", piiKeyFile, piiKeyEnv}
		for _, k := range remove {
			delete(merged, k)
		}
	}
	maps.Copy(merged, vals)
	cfg, _, err := checkedValues(e, name, merged, sources)
	if err != nil {
		return err
	}
	if err := samePIIKey(e, name, a.Settings, cfg.PIIKey); err != nil {
		return usageError{err}
	}
	sealed, err := sealSecrets(e.fleetConfig().SecretsKey, name, vals)
	if err != nil {
		return usageError{err}
	}
	if c, ok := changedReaderRole(e, a, vals, cfg.ReaderRole); ok {
		return setReaderRole(ctx, e, reg, a, sealed, c, remove...)
	}
	if err := reg.UpdateSettings(ctx, name, sealed, remove...); err != nil {
		return notFound(name, err)
	}
	fmt.Fprintf(e.stdout, "account %s: %d setting(s) changed\n", name, len(vals))
	return nil
}

// samePIIKey refuses to drop a PII key stored in the row (an earlier
// release's) for another: the hashes would change, and the stored one may
// be the only copy.
func samePIIKey(e *env, name string, stored map[string]string, now string) error {
	if stored["USERSYNC_PII_KEY"] == "" {
		return nil
	}
	old, err := openSettings(e, name, stored)
	if err != nil {
		return err
	}
	if old["USERSYNC_PII_KEY"] != now {
		return fmt.Errorf("account %s: the new place of its PII key holds another key than the one stored in its row; give the same key (another hashes every value differently)", name)
	}
	return nil
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
