package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// markOwned writes, at migrate, the markers an earlier release did not: of
// schema s of account name, when it has none and is proven this fleet's
// (the default account's schema, or a registered account's that holds
// usersync's tables and is no deployment's default schema: the registry
// gives a schema to one account only), and of its snapshot folder when that
// holds snapshots and no marker (an empty one is marked by its first
// snapshot). A marker naming this account of this fleet in a database of
// another identity (a restored or upgraded copy, registry included) is
// rewritten. It returns a line for what it did or refused.
func markOwned(ctx context.Context, e *env, reg *accounts.Registry, name, s string, isDefault bool) ([]string, error) {
	want, err := reg.OwnerOf(ctx, name)
	if err != nil {
		return nil, err
	}
	got, ok, err := reg.SchemaOwner(ctx, s)
	if err != nil {
		return nil, err
	}
	var lines []string
	switch {
	case ok && got.Is(want):
	case ok && (got.Fleet != want.Fleet || got.Account != want.Account):
		return []string{fmt.Sprintf("account %s: schema %s is marked as %s: accounts remove --drop-data refuses it", name, s, got)}, nil
	case !ok && !isDefault && !mayClaim(ctx, e, reg, s):
		return []string{fmt.Sprintf("account %s: schema %s is not marked as this account's and not proven it (no usersync tables, or a deployment's default schema): accounts remove --drop-data refuses it", name, s)}, nil
	default:
		if err := reg.MarkSchema(ctx, s, want); err != nil {
			return nil, err
		}
		if !isDefault {
			lines = append(lines, fmt.Sprintf("account %s: schema %s marked as this account's", name, s))
		}
	}
	if l := markFolder(ctx, e, s, snapshot.Owner{Fleet: want.Fleet, Database: want.Database, Account: name}); l != "" {
		lines = append(lines, fmt.Sprintf("account %s: %s", name, l))
	}
	return lines, nil
}

// mayClaim reports whether schema s holds usersync's tables and is not a
// deployment's default schema (one with a job queue beside it) nor one of
// the fleet's own.
func mayClaim(ctx context.Context, e *env, reg *accounts.Registry, s string) bool {
	fleet := e.fleetConfig().Schema
	if s == fleet || s == e.riverSchema() || s == accounts.UnionSchema(fleet) {
		return false
	}
	use, err := reg.SchemaUse(ctx, s)
	return err == nil && use.Usersync && !use.River
}

// markFolder marks the snapshot folder of schema s as o's when it holds
// snapshots and no marker; it returns a line saying what it did or why not.
func markFolder(ctx context.Context, e *env, s string, o snapshot.Owner) string {
	dir := e.fleetConfig().SnapshotDir
	if _, err := os.Stat(filepath.Join(dir, s)); !strings.HasPrefix(dir, "s3://") && err != nil {
		return "" // no local folder: nothing to mark, and migrate makes none (it may run where the snapshots are not)
	}
	root, err := snapshotRoot(e)
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
