package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs/fleet/config"
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
				cfg, sealed, err := checkedValues(e, name, vals, sources)
				if err != nil {
					return err
				}
				return addAccount(ctx, e, accounts.Account{Name: name, Settings: sealed}, cfg, !*noViews)
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
	if err := piiKeyWhere(files, vals, sources); err != nil {
		return nil, nil, err
	}
	return vals, sources, nil
}

// checkedValues checks an account's settings to store (its secrets in
// clear, where its PII key is) and returns its Config and the settings as
// stored, secrets sealed. Errors are usage errors.
func checkedValues(e *env, name string, vals, sources map[string]string) (config.Config, map[string]string, error) {
	opened, err := openSettings(e, name, vals)
	if err != nil {
		return config.Config{}, nil, usageError{err}
	}
	cfg, err := config.ForAccount(e.fleetConfig(), name, opened, sources)
	if err != nil {
		return config.Config{}, nil, usageError{err}
	}
	if err := cfg.RequireAPI(); err != nil {
		return config.Config{}, nil, usageError{fmt.Errorf("account %s: %w", name, err)}
	}
	sealed, err := sealSecrets(e.fleetConfig().SecretsKey, name, vals)
	if err != nil {
		return config.Config{}, nil, usageError{err}
	}
	return cfg, sealed, nil
}

// readOnce reads a secret's file for accounts add; the error never holds
// the secret.
func readOnce(flagName, path string) (string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the file
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("--%s: reading %s: %w", flagName, path, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("--%s: %s is empty", flagName, path)
	}
	return v, nil
}

// fleetSettingFlags are the setting flags that set the fleet's Config: all of them,
// except for accounts add and set, whose account-scoped flags are the account's.
func fleetSettingFlags(cmd string, vals map[string]string) map[string]string {
	if cmd != "accounts add" && cmd != "accounts set" {
		return vals
	}
	out := map[string]string{}
	for k, v := range vals {
		out[k] = v
	}
	for _, s := range config.AccountSettings() {
		delete(out, s.Flag)
	}
	return out
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

// addAccount creates and migrates the account's schema and stores it, under
// the migration lock, and remakes the union views when views is set; on any
// error it drops what it made.
func addAccount(ctx context.Context, e *env, a accounts.Account, cfg config.Config, views bool) error {
	pool, err := openPool(ctx, e, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg, err := accounts.New(pool, e.riverSchema())
	if err != nil {
		return err
	}
	var res warehouse.MigrateResult
	err = warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
		if err := checkNewAccount(ctx, e, reg, a); err != nil {
			return err
		}
		made := false
		res, made, err = createAccount(ctx, e, pool, reg, a, cfg, views)
		if err != nil && made {
			if derr := reg.DropSchema(context.WithoutCancel(ctx), a.Schema()); derr != nil {
				return fmt.Errorf("%w (and undoing it: %w)", err, derr)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "account %s added: schema %s at migration %d\n", a.Name, a.Schema(), res.Current)
	for _, n := range res.Notices {
		fmt.Fprintf(e.stdout, "notice: %s\n", n)
	}
	if !views {
		fmt.Fprintf(e.stdout, "account %s: the union views were not remade (--no-views): a running worker remakes them at its next fleet tick, or run usersync accounts views\n", a.Name)
	}
	return nil
}

// createAccount migrates the new schema, stores the row and, when views is
// set, remakes the union views; made says the schema was created (so is to
// be dropped on an error).
func createAccount(ctx context.Context, e *env, pool *pgxpool.Pool, reg *accounts.Registry, a accounts.Account, cfg config.Config, views bool) (warehouse.MigrateResult, bool, error) {
	res, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: a.Schema(), ReaderRole: cfg.ReaderRole})
	if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
		return res, true, usageError{fmt.Errorf("account %s: USERSYNC_READER_ROLE %s is the migrating user or a role it belongs to", a.Name, cfg.ReaderRole)}
	}
	if err != nil {
		return res, true, fmt.Errorf("migrating schema %s: %w", a.Schema(), err)
	}
	if err := markNewAccount(ctx, e, reg, a); err != nil {
		return res, true, err
	}
	ae := *e
	ae.cfg = cfg
	if err := commentPolicyColumns(ctx, &ae, pool); err != nil {
		return res, true, err
	}
	if err := reg.Add(ctx, a); err != nil {
		if errors.Is(err, accounts.ErrNameTaken) || errors.Is(err, accounts.ErrSchemaTaken) {
			err = usageError{err}
		}
		return res, true, err
	}
	if !views {
		return res, true, nil
	}
	if err := refreshUnion(ctx, e, pool, reg); err != nil {
		if rerr := reg.Remove(context.WithoutCancel(ctx), a.Name); rerr != nil {
			return res, true, fmt.Errorf("%w (and undoing it: %w)", err, rerr)
		}
		return res, true, err
	}
	return res, true, nil
}
