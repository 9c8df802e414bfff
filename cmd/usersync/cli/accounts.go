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
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// account is one account of the fleet: the default account, which the
// USERSYNC_* environment configures, or a registered one with its effective
// Config.
type account struct {
	Name   string
	Cfg    config.Config
	Paused bool
	// Err, when set, says why the account's stored settings no longer make
	// a Config (a parser grew stricter, the row was edited by hand); Cfg
	// then holds its schema alone. One such account never stops the others:
	// status shows it with the error, migrate leaves it out.
	Err error
	// Notices say what its row, stored by an earlier release, asks of
	// the operator (storedNotices).
	Notices []string
}

// loadAccounts returns the default account first, then every registered one
// by name, each with its effective Config, or with Err when its settings do
// not make one. A deployment whose registry was never made (not migrated
// since accounts were added) has the default account alone.
func loadAccounts(ctx context.Context, e *env, pool *pgxpool.Pool) ([]account, error) {
	fleet := e.fleetConfig()
	out := []account{{Name: accounts.Default, Cfg: fleet}}
	reg, err := accounts.New(pool, jobs.RiverSchema(fleet.Schema))
	if err != nil {
		return nil, err
	}
	list, err := reg.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		var cfg config.Config
		var err error
		if a.Invalid != nil {
			err = a.Invalid
		} else {
			cfg, err = storedConfig(e, a)
		}
		if err != nil {
			cfg = config.Config{Schema: a.Schema()}
		}
		out = append(out, account{Name: a.Name, Cfg: cfg, Paused: a.Paused(), Err: err, Notices: storedNotices(a.Name, a.Settings)})
	}
	return out, nil
}

// storedConfig is the effective Config of registered account a: its
// secrets opened, its PII key read from where its row says.
func storedConfig(e *env, a accounts.Account) (config.Config, error) {
	vals, err := openSettings(e, a.Name, a.Settings)
	if err != nil {
		return config.Config{}, err
	}
	return config.ForAccount(e.fleetConfig(), a.Name, vals, nil)
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
	pool, err := openPool(ctx, e, 2)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	reg, err := accounts.New(pool, e.riverSchema())
	if err != nil {
		return nil, err
	}
	a, err := reg.Get(ctx, name)
	if errors.Is(err, accounts.ErrNotFound) {
		return nil, usageError{fmt.Errorf("--account %s: no such account (usersync accounts list shows them)", name)}
	}
	if err != nil {
		return nil, err
	}
	cfg, err := storedConfig(e, a)
	if err != nil {
		return nil, usageError{err}
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
