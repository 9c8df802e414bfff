package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// dropRefused is --drop-data refused before anything changed.
func dropRefused(format string, args ...any) error {
	return usageError{fmt.Errorf("--drop-data refused, nothing changed: "+format, args...)}
}

// checkDrop refuses --drop-data for account a unless its schema's marker
// proves it a's, in this fleet and database (never the fleet's own
// schemas), no object outside it depends on its tables (or cascade, and all
// are views), and its snapshot folder is not marked as another's.
func checkDrop(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account, cascade bool) error {
	if err := checkDropSchema(ctx, e, reg, a); err != nil {
		return err
	}
	s := a.Schema()
	deps, err := reg.Dependents(ctx, s, accounts.UnionSchema(e.fleetConfig().Schema))
	if err != nil {
		return err
	}
	if err := refuseDependents(s, deps, cascade); err != nil {
		return err
	}
	root, err := snapshotRoot(e)
	if err != nil || root == nil {
		return err
	}
	want, err := folderOwner(ctx, reg, a.Name)
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
func checkDropSchema(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account) error {
	s, fleet := a.Schema(), e.fleetConfig().Schema
	switch s {
	case "":
		return dropRefused("account %s's row names no schema", a.Name)
	case fleet:
		return dropRefused("schema %s is the fleet's default schema (USERSYNC_SCHEMA), the default account's, not account %s's", s, a.Name)
	case e.riverSchema():
		return dropRefused("schema %s is the fleet's job queue and registry (River), not account %s's", s, a.Name)
	case accounts.UnionSchema(fleet):
		return dropRefused("schema %s is the fleet's union views', not account %s's", s, a.Name)
	}
	use, err := reg.SchemaUse(ctx, s)
	switch {
	case err != nil:
		return err
	case use.River:
		return dropRefused("schema %s has a job queue beside it (%s_river): it is a deployment's default schema, not account %s's", s, s, a.Name)
	case !use.Exists:
		return nil
	}
	want, err := reg.OwnerOf(ctx, a.Name)
	if err != nil {
		return err
	}
	got, ok, err := reg.SchemaOwner(ctx, s)
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
// since the check) a usage error.
func dropError(err error) error {
	var de *accounts.DependentsError
	if errors.As(err, &de) {
		return usageError{fmt.Errorf("--drop-data refused, nothing changed: %w", err)}
	}
	return err
}

// markNewAccount marks the schema accounts add made, and the account's
// snapshot folder, as account a's of this fleet. A folder that holds
// another's snapshots refuses the account.
func markNewAccount(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account) error {
	o, err := reg.OwnerOf(ctx, a.Name)
	if err != nil {
		return err
	}
	if err := reg.MarkSchema(ctx, a.Schema(), o); err != nil {
		return err
	}
	root, err := snapshotRoot(e)
	if err != nil || root == nil {
		return err
	}
	if ids, err := snapshot.Manifests(ctx, root, a.Schema()); err != nil || len(ids) > 0 {
		if err == nil {
			err = usageError{fmt.Errorf("snapshot folder %s/%s holds %d snapshot(s) of another deployment; give account %s a schema of its own (--schema)",
				strings.TrimRight(root.String(), "/"), a.Schema(), len(ids), a.Name)}
		}
		return err
	}
	err = snapshot.MarkFolder(ctx, root, a.Schema(), snapshot.Owner{Fleet: o.Fleet, Database: o.Database, Account: a.Name})
	var fe *snapshot.ForeignFolderError
	if errors.As(err, &fe) {
		return usageError{fmt.Errorf("%w; give account %s a schema of its own (--schema)", err, a.Name)}
	}
	return err
}
