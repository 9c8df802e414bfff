package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// migrateAccounts is usersync migrate's part for the accounts: it
// makes the registry, marks the default account's schema, migrates and
// marks every registered account's schema and remakes the union views,
// returning a line for each account. An account whose stored settings make
// no configuration is left out with a line that says why, and never stops
// the others: the worker, which waits for migrate to succeed, would
// otherwise not start for any account while one row is broken. The caller
// holds the migration lock.
func migrateAccounts(ctx context.Context, e *env, pool *pgxpool.Pool) ([]string, error) {
	reg, err := accounts.New(pool, jobs.RiverSchema(e.cfg.Schema))
	if err != nil {
		return nil, err
	}
	if err := reg.Migrate(ctx); err != nil {
		return nil, err
	}
	lines, err := markOwned(ctx, e, reg, accounts.Default, e.cfg.Schema, true)
	if err != nil {
		return nil, err
	}
	all, err := loadAccounts(ctx, e, pool)
	if err != nil {
		return nil, usageError{err}
	}
	for _, a := range all[1:] {
		if a.Err != nil {
			lines = append(lines, fmt.Sprintf("account %s: not migrated, its settings make no configuration: %v", a.Name, a.Err))
			continue
		}
		more, err := migrateAccount(ctx, e, pool, reg, a.Name, a.Cfg)
		if err != nil {
			return nil, err
		}
		lines = append(lines, more...)
	}
	return lines, refreshUnion(ctx, e, pool, reg)
}

// migrateAccount migrates and marks registered account name's schema.
func migrateAccount(ctx context.Context, e *env, pool *pgxpool.Pool, reg *accounts.Registry, name string, cfg config.Config) ([]string, error) {
	res, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: cfg.Schema, ReaderRole: cfg.ReaderRole})
	if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
		return nil, usageError{fmt.Errorf("account %s: USERSYNC_READER_ROLE %s is the migrating user or a role it belongs to", name, cfg.ReaderRole)}
	}
	if err != nil {
		return nil, fmt.Errorf("account %s: migrating schema %s: %w", name, cfg.Schema, err)
	}
	ae := *e
	ae.cfg = cfg
	if err := commentPolicyColumns(ctx, &ae, pool); err != nil {
		return nil, fmt.Errorf("account %s: %w", name, err)
	}
	lines := []string{fmt.Sprintf("account %s: schema %s at migration %d", name, cfg.Schema, res.Current)}
	for _, n := range res.Notices {
		lines = append(lines, fmt.Sprintf("account %s: notice: %s", name, n))
	}
	marked, err := markOwned(ctx, e, reg, name, cfg.Schema, false)
	return append(lines, marked...), err
}
