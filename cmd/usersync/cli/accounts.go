package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// loadAccounts returns the default account first, then every registered
// one by name, each with its effective Config or the error that says why
// its settings make none (registry.Fleet.List).
func loadAccounts(ctx context.Context, e *env, pool *pgxpool.Pool) ([]registry.Account, error) {
	f, err := registry.New(pool, e.fleetConfig(), e.getenv, e.logger)
	if err != nil {
		return nil, err
	}
	return f.List(ctx)
}

// fleetConfig is the default account's Config, which holds the fleet-wide
// settings, even in an account's env.
func (e *env) fleetConfig() config.Config {
	if e.fleet != nil {
		return *e.fleet
	}
	return e.cfg
}

// riverSchema is the fleet's job queue schema: the default account's River
// schema serves every account.
func (e *env) riverSchema() string { return jobs.RiverSchema(e.fleetConfig().Schema) }

// jobAccount is the Account of the jobs a command queues: "" for the
// default account, so their stored form is today's.
func (e *env) jobAccount() string {
	if e.account == accounts.Default {
		return ""
	}
	return e.account
}

// accountEnv is e for registered account name: its effective Config and a
// logger that names it. An unknown account is a usage error.
func accountEnv(ctx context.Context, e *env, name string) (*env, error) {
	if err := accounts.ValidateName(name); err != nil {
		return nil, usageError{fmt.Errorf("--account: %w", err)}
	}
	var cfg config.Config
	err := withFleet(ctx, e, 2, func(f *registry.Fleet) (err error) {
		cfg, err = f.Resolve(ctx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	fleet := e.cfg
	ae := *e
	ae.cfg, ae.fleet, ae.account = cfg, &fleet, name
	ae.logger = e.logger.With("account", name)
	return &ae, nil
}

// accountScoped gives command c the flag --account NAME: it then runs with
// that account's env. Without it, or with --account default, c runs as it
// always did.
func accountScoped(c command) command {
	setup := c.setup
	c.setup = func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		name := fs.String("account", "", "run for this registered account (usersync accounts list); default: the account the USERSYNC_* environment configures")
		run := setup(fs)
		return func(ctx context.Context, e *env, args []string) error {
			switch *name {
			case "":
				return run(ctx, e, args)
			case accounts.Default:
				de := *e
				de.account = accounts.Default
				return run(ctx, &de, args)
			}
			ae, err := accountEnv(ctx, e, *name)
			if err != nil {
				return err
			}
			err = run(ctx, ae, args)
			var refused *jsonapi.AuthError
			if errors.As(err, &refused) && !strings.HasPrefix(c.name, "auth ") {
				// Said here with the account's remedy; the text alone
				// goes on, so Main does not add the default account's.
				return errors.New(err.Error() + "; " + accountAuthRemedy(*name, ae.cfg))
			}
			return err
		}
	}
	return c
}

// accountAuthRemedy is authRemedy for a registered account.
func accountAuthRemedy(name string, cfg config.Config) string {
	if cfg.OAuthTokenURL != "" {
		return "run usersync auth login --account " + name + " to authorize it again (the refresh token was revoked or expired)"
	}
	return "the API refuses account " + name + "'s token: store a valid one with usersync accounts set " + name + " --api-token-file FILE"
}
