package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// errNoRegistry says to migrate before adding accounts.
var errNoRegistry = errors.New("the account registry does not exist yet: run usersync migrate (with this version) first")

// Check checks the settings to store for account name (its secrets in
// clear, where its PII key is; sources names the flag each came from) and
// returns its Config and the settings as stored, secrets sealed. Errors are
// InputErrors.
func (f *Fleet) Check(name string, vals, sources map[string]string) (config.Config, map[string]string, error) {
	opened, err := f.openSettings(name, vals)
	if err != nil {
		return config.Config{}, nil, InputError{err}
	}
	cfg, err := config.ForAccount(f.Config, name, opened, sources)
	if err != nil {
		return config.Config{}, nil, InputError{err}
	}
	if err := cfg.RequireAPI(); err != nil {
		return config.Config{}, nil, InputError{fmt.Errorf("account %s: %w", name, err)}
	}
	sealed, err := sealSecrets(f.Config.SecretsKey, name, vals)
	if err != nil {
		return config.Config{}, nil, InputError{err}
	}
	return cfg, sealed, nil
}

// Add creates and migrates account a's schema and stores it, under the
// migration lock, and remakes the union views when views is set; on any
// error it drops what it made. cfg is a's Config, as Check made it.
func (f *Fleet) Add(ctx context.Context, a accounts.Account, cfg config.Config, views bool) (warehouse.MigrateResult, error) {
	var res warehouse.MigrateResult
	err := warehouse.WithMigrationLock(ctx, f.Pool, func(ctx context.Context) error {
		if err := f.checkNew(ctx, a); err != nil {
			return err
		}
		var made bool
		var err error
		res, made, err = f.create(ctx, a, cfg, views)
		if err != nil && made {
			if derr := f.Reg.DropSchema(context.WithoutCancel(ctx), a.Schema()); derr != nil {
				return fmt.Errorf("%w (and undoing it: %w)", err, derr)
			}
		}
		return err
	})
	return res, err
}

// create migrates the new schema, stores the row and, when views is set,
// remakes the union views; made says the schema was created (so is to be
// dropped on an error).
func (f *Fleet) create(ctx context.Context, a accounts.Account, cfg config.Config, views bool) (warehouse.MigrateResult, bool, error) {
	res, err := warehouse.Migrate(ctx, f.Pool, warehouse.MigrateOptions{Schema: a.Schema(), ReaderRole: cfg.ReaderRole})
	if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
		return res, true, InputError{fmt.Errorf("account %s: USERSYNC_READER_ROLE %s is the migrating user or a role it belongs to", a.Name, cfg.ReaderRole)}
	}
	if err != nil {
		return res, true, fmt.Errorf("migrating schema %s: %w", a.Schema(), err)
	}
	if err := f.markNew(ctx, a); err != nil {
		return res, true, err
	}
	if err := CommentPolicyColumns(ctx, f.Pool, cfg); err != nil {
		return res, true, err
	}
	if err := f.Reg.Add(ctx, a); err != nil {
		if errors.Is(err, accounts.ErrNameTaken) || errors.Is(err, accounts.ErrSchemaTaken) {
			err = InputError{err}
		}
		return res, true, err
	}
	if !views {
		return res, true, nil
	}
	if err := f.refreshUnion(ctx); err != nil {
		if rerr := f.Reg.Remove(context.WithoutCancel(ctx), a.Name); rerr != nil {
			return res, true, fmt.Errorf("%w (and undoing it: %w)", err, rerr)
		}
		return res, true, err
	}
	return res, true, nil
}

// checkNew refuses a taken name and a schema that is not free: the
// default account's, the union views', another account's, or one that
// exists already (another deployment's, or anybody's: accounts add makes
// the schema it may later drop).
func (f *Fleet) checkNew(ctx context.Context, a accounts.Account) error {
	ok, err := f.Reg.Exists(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errNoRegistry
	}
	list, err := f.Reg.List(ctx)
	if err != nil {
		return err
	}
	s, fleet := a.Schema(), f.Config.Schema
	for _, o := range list {
		switch {
		case o.Name == a.Name:
			return InputError{fmt.Errorf("account %s is registered already (usersync accounts show %s)", a.Name, a.Name)}
		case o.Schema() == s:
			return InputError{fmt.Errorf("schema %s is account %s's; give account %s a schema of its own (--schema)", s, o.Name, a.Name)}
		}
	}
	switch s {
	case fleet:
		return InputError{fmt.Errorf("schema %s is the default account's (USERSYNC_SCHEMA); give account %s a schema of its own (--schema)", s, a.Name)}
	case accounts.UnionSchema(fleet):
		return InputError{fmt.Errorf("schema %s is the fleet's union views'; give account %s another schema (--schema)", s, a.Name)}
	}
	use, err := f.Reg.SchemaUse(ctx, s)
	switch {
	case err != nil:
		return err
	case use.Usersync:
		return InputError{fmt.Errorf("schema %s holds another deployment's usersync tables (%s.schema_migrations); give account %s a schema of its own (--schema)", s, s, a.Name)}
	case use.River:
		return InputError{fmt.Errorf("schema %s_river, another deployment's job queue, exists beside schema %s; give account %s another schema (--schema)", s, s, a.Name)}
	case use.Exists:
		return InputError{fmt.Errorf("schema %s exists already; accounts add creates an account's schema itself (so that --drop-data may drop it): give a new one (--schema)", s)}
	}
	return nil
}

// markNew marks the schema Add made, and the account's snapshot folder, as
// account a's of this fleet. A folder that holds another's snapshots
// refuses the account.
func (f *Fleet) markNew(ctx context.Context, a accounts.Account) error {
	o, err := f.Reg.OwnerOf(ctx, a.Name)
	if err != nil {
		return err
	}
	if err := f.Reg.MarkSchema(ctx, a.Schema(), o); err != nil {
		return err
	}
	root, err := f.snapshotRoot()
	if err != nil || root == nil {
		return err
	}
	if ids, err := snapshot.Manifests(ctx, root, a.Schema()); err != nil || len(ids) > 0 {
		if err == nil {
			err = InputError{fmt.Errorf("snapshot folder %s/%s holds %d snapshot(s) of another deployment; give account %s a schema of its own (--schema)",
				strings.TrimRight(root.String(), "/"), a.Schema(), len(ids), a.Name)}
		}
		return err
	}
	err = snapshot.MarkFolder(ctx, root, a.Schema(), snapshot.Owner{Fleet: o.Fleet, Database: o.Database, Account: a.Name})
	var fe *snapshot.ForeignFolderError
	if errors.As(err, &fe) {
		return InputError{fmt.Errorf("%w; give account %s a schema of its own (--schema)", err, a.Name)}
	}
	return err
}
