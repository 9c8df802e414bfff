package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// MarkerTable is the table in an account's schema that names who made it.
const MarkerTable = "usersync_owner"

// Owner is what a schema's marker says: which fleet (its River schema), in
// which database (DatabaseIdentity), made it for which account.
type Owner struct {
	Fleet, Database, Account string
}

func (o Owner) String() string {
	return fmt.Sprintf("account %s of fleet %s in database %s", o.Account, o.Fleet, o.Database)
}

// Is reports whether o and p name the same account of the same fleet in the
// same database.
func (o Owner) Is(p Owner) bool {
	return o.Fleet == p.Fleet && o.Account == p.Account && SameDatabase(o.Database, p.Database)
}

// SameDatabase reports whether two DatabaseIdentity values name the same
// database: the same name and, when both know it, the same cluster.
func SameDatabase(a, b string) bool {
	an, asys, _ := strings.Cut(a, "@")
	bn, bsys, _ := strings.Cut(b, "@")
	return an == bn && (asys == "" || bsys == "" || asys == bsys)
}

type ownerStatements struct {
	database, systemID, createMarker, commentMarker, clearMarker, writeMarker, markerExists, readMarker string
	dependents, lockTables, lock, ownObjects, dropObject, dropEmptySchema                               string
}

func newOwnerStatements() (ownerStatements, error) {
	var q ownerStatements
	st, err := sqlfile.Load(sqlFiles, "owner", map[string]string{"target": sqlfile.Later, "kind": sqlfile.Later})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("owner", st, map[string]*string{"database": &q.database, "systemID": &q.systemID,
		"createMarker": &q.createMarker, "commentMarker": &q.commentMarker, "clearMarker": &q.clearMarker,
		"writeMarker": &q.writeMarker, "markerExists": &q.markerExists, "readMarker": &q.readMarker,
		"dependents": &q.dependents, "lockTables": &q.lockTables, "lock": &q.lock, "ownObjects": &q.ownObjects,
		"dropObject": &q.dropObject, "dropEmptySchema": &q.dropEmptySchema})
}

// DatabaseIdentity names the database db is connected to: its name, and
// "@" its cluster's system identifier when the user may read it, so that a
// copy restored into another cluster is not taken for it.
func (r *Registry) DatabaseIdentity(ctx context.Context) (string, error) {
	var name string
	var sys bool
	if err := r.db.QueryRow(ctx, r.own.database).Scan(&name, &sys); err != nil {
		return "", fmt.Errorf("reading the database's identity: %w", err)
	}
	if !sys {
		return name, nil
	}
	var id string
	if err := r.db.QueryRow(ctx, r.own.systemID).Scan(&id); err != nil {
		return "", fmt.Errorf("reading the database's identity: %w", err)
	}
	return name + "@" + id, nil
}

// Fleet is the fleet's River schema, which the registry is kept in.
func (r *Registry) Fleet() string { return r.fleet }

// OwnerOf is the marker the registry's fleet writes for account in this
// database.
func (r *Registry) OwnerOf(ctx context.Context, account string) (Owner, error) {
	db, err := r.DatabaseIdentity(ctx)
	return Owner{Fleet: r.fleet, Database: db, Account: account}, err
}

// MarkSchema writes o as the marker of schemaName, replacing any.
func (r *Registry) MarkSchema(ctx context.Context, schemaName string, o Owner) error {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return err
	}
	fill := map[string]string{"target": schema.QuoteIdentifier(schemaName)}
	for _, s := range []string{r.own.createMarker, r.own.commentMarker, r.own.clearMarker} {
		if _, err := r.db.Exec(ctx, sqlfile.Fill(s, fill)); err != nil {
			return fmt.Errorf("marking schema %s as usersync's: %w", schemaName, err)
		}
	}
	if _, err := r.db.Exec(ctx, sqlfile.Fill(r.own.writeMarker, fill), o.Fleet, o.Database, o.Account); err != nil {
		return fmt.Errorf("marking schema %s as usersync's: %w", schemaName, err)
	}
	return nil
}

// SchemaOwner reads the marker of schemaName; ok is false when it has none,
// or more than one row (which proves nothing).
func (r *Registry) SchemaOwner(ctx context.Context, schemaName string) (o Owner, ok bool, err error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return o, false, err
	}
	quoted := schema.QuoteIdentifier(schemaName)
	if err := r.db.QueryRow(ctx, r.own.markerExists, quoted+"."+MarkerTable).Scan(&ok); err != nil || !ok {
		return o, false, wrapMarker(schemaName, err)
	}
	rows, err := r.db.Query(ctx, sqlfile.Fill(r.own.readMarker, map[string]string{"target": quoted}))
	if err != nil {
		return o, false, wrapMarker(schemaName, err)
	}
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Owner, error) {
		var m Owner
		return m, row.Scan(&m.Fleet, &m.Database, &m.Account)
	})
	if err != nil || len(all) != 1 {
		return o, false, wrapMarker(schemaName, err)
	}
	return all[0], true, nil
}

func wrapMarker(schemaName string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("reading schema %s's marker: %w", schemaName, err)
}

// Dependent is an object outside a schema that depends on one of its
// objects.
type Dependent struct {
	Kind, Name string // as pg_identify_object names them: "view", "public.v"
	Schema     string // its schema, or its table's; "" for neither
}

func (d Dependent) String() string { return d.Kind + " " + d.Name }

// droppable is the DROP keyword of the dependents a drop may remove when
// asked: views only; anything else (a column of another table, a
// constraint) is the operator's to change.
var droppable = map[string]string{"view": "VIEW", "materialized view": "MATERIALIZED VIEW"}

// Dependents lists the objects outside schemaName that depend on its
// objects, leaving out the schemas skip and what depends on them.
func (r *Registry) Dependents(ctx context.Context, schemaName string, skip ...string) ([]Dependent, error) {
	return dependents(ctx, r.db, r.own, schemaName, skip)
}

func dependents(ctx context.Context, db DBTX, q ownerStatements, schemaName string, skip []string) ([]Dependent, error) {
	if skip == nil {
		skip = []string{}
	}
	rows, err := db.Query(ctx, q.dependents, schemaName, skip)
	if err != nil {
		return nil, fmt.Errorf("looking for what depends on schema %s: %w", schemaName, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dependent, error) {
		var d Dependent
		var depth int
		return d, row.Scan(&d.Kind, &d.Name, &d.Schema, &depth)
	})
	if err != nil {
		return nil, fmt.Errorf("looking for what depends on schema %s: %w", schemaName, err)
	}
	return out, nil
}

// DependentsError is a drop refused because objects outside the schema
// depend on it.
type DependentsError struct {
	Schema     string
	Dependents []Dependent
	// Undroppable is set when some are not views, which no drop removes.
	Undroppable bool
}

func (e *DependentsError) Error() string {
	names := make([]string, len(e.Dependents))
	for i, d := range e.Dependents {
		names[i] = d.String()
	}
	return fmt.Sprintf("schema %s: %d object(s) outside it depend on its tables: %s", e.Schema, len(names), strings.Join(names, ", "))
}

// ErrNoBegin is a registry made on a connection that cannot start a
// transaction.
var ErrNoBegin = errors.New("the registry's connection cannot start a transaction")
