package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// readerRoleChange is the account's reader role before and after accounts
// set, when it changes.
type readerRoleChange struct{ old, new string }

// changedReaderRole says whether vals, given to accounts set for a, change
// its reader role (newRole, as its merged settings make it): the role it
// had is its stored one, else the fleet's, which it inherits.
func changedReaderRole(e *env, a accounts.Account, vals map[string]string, newRole string) (readerRoleChange, bool) {
	if _, ok := vals["USERSYNC_READER_ROLE"]; !ok {
		return readerRoleChange{}, false
	}
	old, ok := a.Settings["USERSYNC_READER_ROLE"]
	if !ok {
		old = e.cfg.ReaderRole
	}
	return readerRoleChange{old: old, new: newRole}, old != newRole
}

// setReaderRole stores vals for account a whose reader role changes, under
// the migration lock: it grants the new role the account's tables (as
// migrate does) before anything is stored, revokes the old role's access to
// the account's schema (its grants elsewhere stay), and remakes the union
// views, which hold only the accounts the fleet's reader role may read.
func setReaderRole(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account, vals map[string]string, c readerRoleChange, remove ...string) error {
	pool, err := openPool(ctx, e, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	var notices []string
	err = warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
		res, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: a.Schema(), ReaderRole: c.new})
		if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
			return usageError{fmt.Errorf("--reader-role %s is the migrating user or a role it belongs to; give the account's analysts a role of their own", c.new)}
		}
		if err != nil {
			return fmt.Errorf("granting %s schema %s: %w", c.new, a.Schema(), err)
		}
		notices = res.Notices
		if err := reg.UpdateSettings(ctx, a.Name, vals, remove...); err != nil {
			return notFound(a.Name, err)
		}
		if c.old != "" {
			if err := warehouse.RevokeReader(ctx, pool, a.Schema(), c.old); err != nil {
				return fmt.Errorf("account %s's settings changed, but %w; run usersync accounts set %s --reader-role %s again", a.Name, err, a.Name, c.new)
			}
		}
		return refreshUnion(ctx, e, pool, reg)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "account %s: %d setting(s) changed\n", a.Name, len(vals))
	if c.old != "" {
		fmt.Fprintf(e.stdout, "account %s: role %s may no longer read schema %s\n", a.Name, c.old, a.Schema())
	}
	if c.new != "" && len(notices) == 0 {
		fmt.Fprintf(e.stdout, "account %s: role %s may read the analysts' tables of schema %s\n", a.Name, c.new, a.Schema())
	}
	for _, n := range notices {
		fmt.Fprintf(e.stdout, "account %s: notice: %s\n", a.Name, n)
	}
	return nil
}
