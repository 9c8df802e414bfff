package accounts

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// ownKinds is the DROP keyword of each kind of object a schema's drop
// removes one by one; a schema holding anything else is left to the
// operator.
var ownKinds = map[string]string{"table": "TABLE", "view": "VIEW", "materialized view": "MATERIALIZED VIEW",
	"sequence": "SEQUENCE", "foreign table": "FOREIGN TABLE", "index": "INDEX", "function": "FUNCTION",
	"procedure": "PROCEDURE", "aggregate": "AGGREGATE", "type": "TYPE", "composite type": "TYPE", "domain": "DOMAIN"}

// DropAccountSchema drops schemaName and what is in it, in one transaction.
// It locks the schema's tables, so that no view is made over them meanwhile,
// and refuses (a *DependentsError) while objects outside the schema depend
// on them, unless cascade: then it drops those, when they are all views,
// deepest first, and returns them. It then drops each of the schema's own
// objects and the schema, never with CASCADE, so that nothing past the
// schema can go with it. A dependent in a schema of keep (the union views')
// is never dropped: it refuses the drop. The caller has checked the
// schema's marker.
func (r *Registry) DropAccountSchema(ctx context.Context, schemaName string, cascade bool, keep ...string) ([]Dependent, error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return nil, err
	}
	b, ok := r.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return nil, ErrNoBegin
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("dropping schema %s: %w", schemaName, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := lockSchema(ctx, tx, r.own, schemaName); err != nil {
		return nil, err
	}
	deps, err := dependents(ctx, tx, r.own, schemaName, nil)
	if err != nil {
		return nil, err
	}
	if err := dropDependents(ctx, tx, r.own, schemaName, deps, cascade, keep); err != nil {
		return nil, err
	}
	if err := dropOwnObjects(ctx, tx, r.own, schemaName); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, sqlfile.Fill(r.own.dropEmptySchema, map[string]string{"target": schema.QuoteIdentifier(schemaName)})); err != nil {
		return nil, fmt.Errorf("dropping schema %s: %w", schemaName, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("dropping schema %s: %w", schemaName, err)
	}
	return deps, nil
}

// lockSchema takes every relation of schemaName in ACCESS EXCLUSIVE mode.
func lockSchema(ctx context.Context, tx pgx.Tx, q ownerStatements, schemaName string) error {
	rows, err := tx.Query(ctx, q.lockTables, schemaName)
	if err != nil {
		return fmt.Errorf("locking schema %s's tables: %w", schemaName, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(names) == 0 {
		return wrapLock(schemaName, err)
	}
	_, err = tx.Exec(ctx, sqlfile.Fill(q.lock, map[string]string{"target": strings.Join(names, ", ")}))
	return wrapLock(schemaName, err)
}

func wrapLock(schemaName string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("locking schema %s's tables: %w", schemaName, err)
}

// dropDependents drops deps, deepest first, when cascade is set and all are
// views outside keep; otherwise any is a *DependentsError.
func dropDependents(ctx context.Context, tx pgx.Tx, q ownerStatements, schemaName string, deps []Dependent, cascade bool, keep []string) error {
	if len(deps) == 0 {
		return nil
	}
	for _, d := range deps {
		if droppable[d.Kind] == "" || slices.Contains(keep, d.Schema) {
			return &DependentsError{Schema: schemaName, Dependents: deps, Undroppable: true}
		}
	}
	if !cascade {
		return &DependentsError{Schema: schemaName, Dependents: deps}
	}
	for _, d := range deps {
		if _, err := tx.Exec(ctx, sqlfile.Fill(q.dropObject, map[string]string{"kind": droppable[d.Kind], "target": d.Name})); err != nil {
			return fmt.Errorf("dropping %s, which depends on schema %s: %w", d, schemaName, err)
		}
	}
	return nil
}

// dropOwnObjects drops each object of schemaName without CASCADE, in passes:
// one that others in the schema depend on fails (in its savepoint) until
// they are gone.
func dropOwnObjects(ctx context.Context, tx pgx.Tx, q ownerStatements, schemaName string) error {
	rows, err := tx.Query(ctx, q.ownObjects, schemaName)
	if err != nil {
		return fmt.Errorf("listing schema %s's objects: %w", schemaName, err)
	}
	objs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dependent, error) {
		var d Dependent
		return d, row.Scan(&d.Kind, &d.Name)
	})
	if err != nil {
		return fmt.Errorf("listing schema %s's objects: %w", schemaName, err)
	}
	for _, o := range objs {
		if ownKinds[o.Kind] == "" {
			return fmt.Errorf("schema %s holds %s, which usersync does not drop: drop it first", schemaName, o)
		}
	}
	for len(objs) > 0 {
		var left []Dependent
		var lastErr error
		for _, o := range objs {
			if err := dropInSavepoint(ctx, tx, sqlfile.Fill(q.dropObject, map[string]string{"kind": ownKinds[o.Kind], "target": o.Name})); err != nil {
				left, lastErr = append(left, o), err
			}
		}
		if len(left) == len(objs) {
			return fmt.Errorf("dropping %s in schema %s: %w", left[0], schemaName, lastErr)
		}
		objs = left
	}
	return nil
}

func dropInSavepoint(ctx context.Context, tx pgx.Tx, stmt string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, stmt); err != nil {
		_ = sp.Rollback(ctx) // the drop's error is the one to report
		return err
	}
	return sp.Commit(ctx)
}
