package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

func accountsAddCommand() command {
	return command{
		name:    "accounts add",
		summary: "register an account: create and migrate its schema and store its settings",
		args:    "NAME --api-url URL",
		details: `Registers account NAME (a lower-case identifier; not default) in the fleet's
registry (<USERSYNC_SCHEMA>_river.accounts), creates and migrates its schema
(--schema, default <USERSYNC_SCHEMA>_NAME, so that fleets never share one; never
one another account or deployment uses), marks it and its snapshot folder as this
account's (what accounts remove --drop-data checks) and grants its reader role. A running worker picks it up without a restart.
The account-scoped settings' flags (docs/configuration.md) are the account's;
one not given is the fleet's, except the schema and the credentials. Secrets
never go on the command line, and none is taken from the environment:
--api-token-file, --oauth-client-secret-file and --oauth-refresh-token-file are
read once and stored encrypted with USERSYNC_SECRETS_KEY (required for them);
the PII key is never stored: --pii-key-file PATH or --pii-key-env NAME stores
where the worker reads it. Nothing is left half-made on an error. It then remakes the union views
(<USERSYNC_SCHEMA>_all), which costs more the more accounts there are: to
register many accounts, give --no-views to each and let a running worker remake
them at its next fleet tick (or run usersync accounts views once).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			files := secretFileFlags(fs)
			noViews := fs.Bool("no-views", false, "do not remake the union views: a running worker's next fleet tick does, or usersync accounts views (for registering many accounts)")
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName("add", args)
				if err != nil {
					return err
				}
				vals, sources, err := addValues(e, fs, files, name)
				if err != nil {
					return usageError{err}
				}
				// Checked before connecting, which the check needs not.
				cfg, sealed, err := (&registry.Fleet{Config: e.fleetConfig(), Getenv: e.getenv}).Check(name, vals, sources)
				if err != nil {
					return err
				}
				return withFleet(ctx, e, 4, func(f *registry.Fleet) error {
					a := accounts.Account{Name: name, Settings: sealed}
					res, err := f.Add(ctx, a, cfg, !*noViews)
					if err != nil {
						return err
					}
					printAdded(e.stdout, a, res, !*noViews)
					return nil
				})
			}
		},
	}
}

// oneAccountName is the NAME argument of accounts VERB, checked.
func oneAccountName(verb string, args []string) (string, error) {
	if len(args) != 1 {
		return "", usageError{fmt.Errorf("give one account name: usersync accounts %s NAME", verb)}
	}
	if err := accounts.ValidateName(args[0]); err != nil {
		return "", usageError{err}
	}
	return args[0], nil
}

// addValues are the settings accounts add stores: those given
// (givenValues), the API URL required, and the schema.
func addValues(e *env, fs *flag.FlagSet, files map[string]*string, name string) (map[string]string, map[string]string, error) {
	vals, sources, err := givenValues(fs, files)
	if err != nil {
		return nil, nil, err
	}
	if vals["USERSYNC_API_URL"] == "" {
		return nil, nil, errors.New("--api-url is required: the account's API base URL, without /api/v2")
	}
	if _, ok := vals[accounts.SchemaSetting]; !ok {
		// Named after the fleet's schema, so that fleets never share one.
		vals[accounts.SchemaSetting], sources[accounts.SchemaSetting] = e.fleetConfig().Schema+"_"+name, "the account's schema"
	}
	return vals, sources, nil
}

// givenValues are the account-scoped settings' flags that were given, the
// secrets from their files and where the PII key is; never a value of the
// environment, which holds the default account's. sources names the flag
// each came from.
func givenValues(fs *flag.FlagSet, files map[string]*string) (map[string]string, map[string]string, error) {
	vals, sources := map[string]string{}, map[string]string{}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, s := range config.AccountSettings() {
		switch {
		case s.Flag != "" && given[s.Flag]:
			vals[s.Env], sources[s.Env] = fs.Lookup(s.Flag).Value.String(), "--"+s.Flag
		case s.Secret && s.Env != "USERSYNC_PII_KEY" && *files[s.Env] != "":
			v, err := readOnce(config.FileFlag(s), *files[s.Env])
			if err != nil {
				return nil, nil, err
			}
			vals[s.Env], sources[s.Env] = v, "--"+config.FileFlag(s)
		}
	}
	if err := registry.PIIKeyWhere(*files["USERSYNC_PII_KEY"], *files[registry.PIIKeyEnv], vals, sources); err != nil {
		return nil, nil, err
	}
	return vals, sources, nil
}

// readOnce reads a secret's file for accounts add; the error never holds
// the secret.
func readOnce(flagName, path string) (string, error) {
	v, err := registry.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flagName, err)
	}
	return v, nil
}

// nameFirst lets an accounts command take its NAME before its flags
// (usersync accounts add eu --api-url ...), which package flag would take
// for the end of the flags: the name moves after them.
func nameFirst(cmd string, args []string) []string {
	if !strings.HasPrefix(cmd, "accounts ") || len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return args
	}
	return append(append([]string(nil), args[1:]...), args[0])
}

// printAdded says what accounts add made.
func printAdded(w io.Writer, a accounts.Account, res warehouse.MigrateResult, views bool) {
	fmt.Fprintf(w, "account %s added: schema %s at migration %d\n", a.Name, a.Schema(), res.Current)
	for _, n := range res.Notices {
		fmt.Fprintf(w, "notice: %s\n", n)
	}
	if !views {
		fmt.Fprintf(w, "account %s: the union views were not remade (--no-views): a running worker remakes them at its next fleet tick, or run usersync accounts views\n", a.Name)
	}
}

// secretFileFlags registers accounts add's and set's flag for each
// account-scoped secret's file (read once and stored sealed), and the PII
// key's --pii-key-file and --pii-key-env, which are stored as they are.
func secretFileFlags(fs *flag.FlagSet) map[string]*string {
	files := map[string]*string{}
	for _, s := range config.AccountSettings() {
		switch {
		case s.Env == "USERSYNC_PII_KEY":
			files[s.Env] = fs.String(config.FileFlag(s), "", "the file holding the account's PII key (USERSYNC_PII_KEY): its path is stored, never the key, and the worker reads it when it opens the account")
			files[registry.PIIKeyEnv] = fs.String("pii-key-env", "", "the variable of the worker's environment holding the account's PII key: its name is stored, never the key")
		case s.Secret:
			files[s.Env] = fs.String(config.FileFlag(s), "", "a file holding the account's secret of that name, read once and stored encrypted (USERSYNC_SECRETS_KEY)")
		}
	}
	return files
}
