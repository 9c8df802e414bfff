package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// Account is one account of the fleet: the default account, which the
// USERSYNC_* environment configures, or a registered one with its effective
// Config.
type Account struct {
	Name   string
	Cfg    config.Config
	Paused bool
	// Err, when set, says why the account's stored settings no longer make
	// a Config (a parser grew stricter, the row was edited by hand); Cfg
	// then holds its schema alone. One such account never stops the others:
	// status shows it with the error, migrate leaves it out.
	Err error
	// Notices say what its row, stored by an earlier release, asks of
	// the operator.
	Notices []string
}

// List returns the default account first, then every registered one by
// name, each with its effective Config, or with Err when its settings do
// not make one. A deployment whose registry was never made (not migrated
// since accounts were added) has the default account alone.
func (f *Fleet) List(ctx context.Context) ([]Account, error) {
	out := []Account{{Name: accounts.Default, Cfg: f.Config}}
	list, err := f.Reg.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		var cfg config.Config
		var err error
		if a.Invalid != nil {
			err = a.Invalid
		} else {
			cfg, err = f.AccountConfig(a)
		}
		if err != nil {
			cfg = config.Config{Schema: a.Schema()}
		}
		out = append(out, Account{Name: a.Name, Cfg: cfg, Paused: a.Paused(), Err: err, Notices: storedNotices(a.Name, a.Settings)})
	}
	return out, nil
}

// AccountConfig is the effective Config of registered account a: its
// secrets opened, its PII key read from where its row says.
func (f *Fleet) AccountConfig(a accounts.Account) (config.Config, error) {
	vals, err := f.openSettings(a.Name, a.Settings)
	if err != nil {
		return config.Config{}, err
	}
	return config.ForAccount(f.Config, a.Name, vals, nil)
}

// Resolve is registered account name's effective Config; an unknown
// account, or one whose settings make none, is an InputError.
func (f *Fleet) Resolve(ctx context.Context, name string) (config.Config, error) {
	a, err := f.Reg.Get(ctx, name)
	if errors.Is(err, accounts.ErrNotFound) {
		return config.Config{}, InputError{fmt.Errorf("--account %s: no such account (usersync accounts list shows them)", name)}
	}
	if err != nil {
		return config.Config{}, err
	}
	cfg, err := f.AccountConfig(a)
	if err != nil {
		return config.Config{}, InputError{err}
	}
	return cfg, nil
}
