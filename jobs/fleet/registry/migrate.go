package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// Migrate is usersync migrate's part for the accounts: it makes the
// registry, marks the default account's schema, migrates and marks every
// registered account's schema and remakes the union views, returning a line
// for each account. An account whose stored settings make no configuration
// is left out with a line that says why, and never stops the others: the
// worker, which waits for migrate to succeed, would otherwise not start for
// any account while one row is broken. The caller holds the migration lock.
func (f *Fleet) Migrate(ctx context.Context) ([]string, error) {
	if err := f.Reg.Migrate(ctx); err != nil {
		return nil, err
	}
	lines, err := f.markOwned(ctx, accounts.Default, f.Config.Schema, true)
	if err != nil {
		return nil, err
	}
	all, err := f.List(ctx)
	if err != nil {
		return nil, InputError{err}
	}
	for _, a := range all[1:] {
		if a.Err != nil {
			lines = append(lines, fmt.Sprintf("account %s: not migrated, its settings make no configuration: %v", a.Name, a.Err))
			continue
		}
		more, err := f.migrateAccount(ctx, a.Name, a.Cfg)
		if err != nil {
			return nil, err
		}
		lines = append(lines, more...)
	}
	return lines, f.refreshUnion(ctx)
}

// migrateAccount migrates and marks registered account name's schema.
func (f *Fleet) migrateAccount(ctx context.Context, name string, cfg config.Config) ([]string, error) {
	res, err := warehouse.Migrate(ctx, f.Pool, warehouse.MigrateOptions{Schema: cfg.Schema, ReaderRole: cfg.ReaderRole})
	if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
		return nil, InputError{fmt.Errorf("account %s: USERSYNC_READER_ROLE %s is the migrating user or a role it belongs to", name, cfg.ReaderRole)}
	}
	if err != nil {
		return nil, fmt.Errorf("account %s: migrating schema %s: %w", name, cfg.Schema, err)
	}
	if err := CommentPolicyColumns(ctx, f.Pool, cfg); err != nil {
		return nil, fmt.Errorf("account %s: %w", name, err)
	}
	lines := []string{fmt.Sprintf("account %s: schema %s at migration %d", name, cfg.Schema, res.Current)}
	for _, n := range res.Notices {
		lines = append(lines, fmt.Sprintf("account %s: notice: %s", name, n))
	}
	marked, err := f.markOwned(ctx, name, cfg.Schema, false)
	return append(lines, marked...), err
}

// markOwned writes, at migrate, the markers an earlier release did not: of
// schema s of account name, when it has none and is proven this fleet's
// (the default account's schema, or a registered account's that holds
// usersync's tables and is no deployment's default schema: the registry
// gives a schema to one account only), and of its snapshot folder when that
// holds snapshots and no marker (an empty one is marked by its first
// snapshot). A marker naming this account of this fleet in a database of
// another identity (a restored or upgraded copy, registry included) is
// rewritten. It returns a line for what it did or refused.
func (f *Fleet) markOwned(ctx context.Context, name, s string, isDefault bool) ([]string, error) {
	want, err := f.Reg.OwnerOf(ctx, name)
	if err != nil {
		return nil, err
	}
	got, ok, err := f.Reg.SchemaOwner(ctx, s)
	if err != nil {
		return nil, err
	}
	var lines []string
	switch {
	case ok && got.Is(want):
	case ok && (got.Fleet != want.Fleet || got.Account != want.Account):
		return []string{fmt.Sprintf("account %s: schema %s is marked as %s: accounts remove --drop-data refuses it", name, s, got)}, nil
	case !ok && !isDefault && !f.mayClaim(ctx, s):
		return []string{fmt.Sprintf("account %s: schema %s is not marked as this account's and not proven it (no usersync tables, or a deployment's default schema): accounts remove --drop-data refuses it", name, s)}, nil
	default:
		if err := f.Reg.MarkSchema(ctx, s, want); err != nil {
			return nil, err
		}
		if !isDefault {
			lines = append(lines, fmt.Sprintf("account %s: schema %s marked as this account's", name, s))
		}
	}
	if l := f.markFolder(ctx, s, snapshot.Owner{Fleet: want.Fleet, Database: want.Database, Account: name}); l != "" {
		lines = append(lines, fmt.Sprintf("account %s: %s", name, l))
	}
	return lines, nil
}

// mayClaim reports whether schema s holds usersync's tables and is not a
// deployment's default schema (one with a job queue beside it) nor one of
// the fleet's own.
func (f *Fleet) mayClaim(ctx context.Context, s string) bool {
	fleet := f.Config.Schema
	if s == fleet || s == f.riverSchema() || s == accounts.UnionSchema(fleet) {
		return false
	}
	use, err := f.Reg.SchemaUse(ctx, s)
	return err == nil && use.Usersync && !use.River
}

// markFolder marks the snapshot folder of schema s as o's when it holds
// snapshots and no marker; it returns a line saying what it did or why not.
func (f *Fleet) markFolder(ctx context.Context, s string, o snapshot.Owner) string {
	dir := f.Config.SnapshotDir
	if _, err := os.Stat(filepath.Join(dir, s)); !strings.HasPrefix(dir, "s3://") && err != nil {
		return "" // no local folder: nothing to mark, and migrate makes none (it may run where the snapshots are not)
	}
	root, err := f.snapshotRoot()
	if err != nil || root == nil {
		return ""
	}
	got, ok, err := snapshot.FolderOwner(ctx, root, s)
	switch {
	case err != nil:
		return fmt.Sprintf("snapshot folder of schema %s not marked: %v", s, err)
	case ok && got.Is(o):
		return ""
	case ok:
		return fmt.Sprintf("snapshot folder of schema %s is %s: its snapshots are not written there nor removed", s, got)
	}
	ids, err := snapshot.Manifests(ctx, root, s)
	if err != nil {
		return fmt.Sprintf("snapshot folder of schema %s not marked: %v", s, err)
	}
	if len(ids) == 0 {
		return ""
	}
	if err := snapshot.MarkFolder(ctx, root, s, o); err != nil {
		return fmt.Sprintf("snapshot folder of schema %s not marked: %v", s, err)
	}
	return fmt.Sprintf("snapshot folder of schema %s marked as this account's (%d snapshot(s))", s, len(ids))
}
