package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// RemoveResult is what Remove dropped, when asked to drop the data: the
// objects outside the schema that depended on it (with cascade), and the
// snapshot files removed and those left, not proven the account's.
// SchemaDropped says the schema is gone, even when removing its snapshots
// then failed.
type RemoveResult struct {
	SchemaDropped bool
	Dropped       []accounts.Dependent
	Files, Left   int
}

// Remove unregisters a and remakes the union views without it, under the
// migration lock, then drops its data if asked: its schema (after the union
// views, which then no longer depend on it; cascade drops the views outside
// it over its tables) and its snapshots. A drop that fails puts the row
// back. Check a drop first with CheckDrop.
func (f *Fleet) Remove(ctx context.Context, a accounts.Account, drop, cascade bool) (RemoveResult, error) {
	var res RemoveResult
	err := warehouse.WithMigrationLock(ctx, f.Pool, func(ctx context.Context) error {
		if err := f.Reg.Remove(ctx, a.Name); err != nil {
			return NotFound(a.Name, err)
		}
		if err := f.refreshUnion(ctx); err != nil {
			return undoRemove(ctx, f.Reg, a, err, nil)
		}
		if !drop {
			return nil
		}
		var err error
		if res.Dropped, err = f.Reg.DropAccountSchema(ctx, a.Schema(), cascade, accounts.UnionSchema(f.Config.Schema)); err != nil {
			return undoRemove(ctx, f.Reg, a, dropError(err), f.refreshUnion)
		}
		return nil
	})
	if err != nil || !drop {
		return res, err
	}
	res.SchemaDropped = true
	res.Files, res.Left, err = f.dropSnapshots(ctx, a)
	if err != nil {
		return res, fmt.Errorf("account %s removed and schema %s dropped, but removing its snapshots failed: %w", a.Name, a.Schema(), err)
	}
	return res, nil
}

// undoRemove stores a again after its removal failed with err, and remakes
// the union views with it when they were remade without it (union).
func undoRemove(ctx context.Context, reg *accounts.Registry, a accounts.Account, err error, union func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	if aerr := reg.Add(ctx, a); aerr != nil {
		return fmt.Errorf("%w (and undoing it: %w)", err, aerr)
	}
	if union == nil {
		return err
	}
	if uerr := union(ctx); uerr != nil {
		return fmt.Errorf("%w (and remaking the union views after undoing it: %w)", err, uerr)
	}
	return err
}

// dropSnapshots removes account a's snapshot files, those proven its, and
// returns how many, and how many were left.
func (f *Fleet) dropSnapshots(ctx context.Context, a accounts.Account) (int, int, error) {
	root, err := f.snapshotRoot()
	if err != nil || root == nil {
		return 0, 0, err
	}
	o, err := folderOwner(ctx, f.Reg, a.Name)
	if err != nil {
		return 0, 0, err
	}
	return snapshot.DropFolder(ctx, root, a.Schema(), o, f.Logger)
}

// dropRefused is --drop-data refused before anything changed.
func dropRefused(format string, args ...any) error {
	return InputError{fmt.Errorf("--drop-data refused, nothing changed: "+format, args...)}
}

// CheckDrop refuses --drop-data for account a unless its schema's marker
// proves it a's, in this fleet and database (never the fleet's own
// schemas), no object outside it depends on its tables (or cascade, and all
// are views), and its snapshot folder is not marked as another's.
func (f *Fleet) CheckDrop(ctx context.Context, a accounts.Account, cascade bool) error {
	if err := f.checkDropSchema(ctx, a); err != nil {
		return err
	}
	s := a.Schema()
	deps, err := f.Reg.Dependents(ctx, s, accounts.UnionSchema(f.Config.Schema))
	if err != nil {
		return err
	}
	if err := refuseDependents(s, deps, cascade); err != nil {
		return err
	}
	root, err := f.snapshotRoot()
	if err != nil || root == nil {
		return err
	}
	want, err := folderOwner(ctx, f.Reg, a.Name)
	if err != nil {
		return err
	}
	got, ok, err := snapshot.FolderOwner(ctx, root, s)
	switch {
	case err != nil:
		return fmt.Errorf("reading the snapshot folder's marker: %w", err)
	case ok && !got.Is(want):
		return dropRefused("snapshot folder %s/%s is %s (its _owner.json), not account %s's", strings.TrimRight(root.String(), "/"), s, got, a.Name)
	}
	return nil
}

// checkDropSchema refuses the schema of a unless its marker proves it a's.
func (f *Fleet) checkDropSchema(ctx context.Context, a accounts.Account) error {
	s, fleet := a.Schema(), f.Config.Schema
	switch s {
	case "":
		return dropRefused("account %s's row names no schema", a.Name)
	case fleet:
		return dropRefused("schema %s is the fleet's default schema (USERSYNC_SCHEMA), the default account's, not account %s's", s, a.Name)
	case f.riverSchema():
		return dropRefused("schema %s is the fleet's job queue and registry (River), not account %s's", s, a.Name)
	case accounts.UnionSchema(fleet):
		return dropRefused("schema %s is the fleet's union views', not account %s's", s, a.Name)
	}
	use, err := f.Reg.SchemaUse(ctx, s)
	switch {
	case err != nil:
		return err
	case use.River:
		return dropRefused("schema %s has a job queue beside it (%s_river): it is a deployment's default schema, not account %s's", s, s, a.Name)
	case !use.Exists:
		return nil
	}
	want, err := f.Reg.OwnerOf(ctx, a.Name)
	if err != nil {
		return err
	}
	got, ok, err := f.Reg.SchemaOwner(ctx, s)
	switch {
	case err != nil:
		return err
	case !ok:
		return dropRefused("schema %s has no usersync marker (%s.%s) proving it account %s's; usersync migrate marks the schemas it made for this fleet's accounts",
			s, s, accounts.MarkerTable, a.Name)
	case !got.Is(want):
		return dropRefused("schema %s is marked as %s, not as %s", s, got, want)
	}
	return nil
}

// refuseDependents refuses a drop that would take objects outside schema s
// with it: always those that are not views, and views unless cascade.
func refuseDependents(s string, deps []accounts.Dependent, cascade bool) error {
	if len(deps) == 0 {
		return nil
	}
	names := make([]string, len(deps))
	views := true
	for i, d := range deps {
		names[i] = d.String()
		views = views && (d.Kind == "view" || d.Kind == "materialized view")
	}
	switch {
	case !views:
		return dropRefused("objects outside schema %s depend on its tables, not all views: %s; drop or change them first", s, strings.Join(names, ", "))
	case !cascade:
		return dropRefused("views outside schema %s depend on its tables: %s; give --cascade to drop them too", s, strings.Join(names, ", "))
	}
	return nil
}

// dropError makes a drop refused inside the lock (a dependent appeared
// since the check) an InputError.
func dropError(err error) error {
	var de *accounts.DependentsError
	if errors.As(err, &de) {
		return InputError{fmt.Errorf("--drop-data refused, nothing changed: %w", err)}
	}
	return err
}
