package warehouse

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// readersSQL holds the statements of sql/readers.sql for one schema.
type readersSQL struct {
	revokeTable, revokeSchema, otherReaders string
}

func newReadersSQL(schemaName string) (readersSQL, error) {
	st, err := sqlfile.Load(sqlFiles, "readers", map[string]string{"schema": schema.QuoteIdentifier(schemaName),
		"role": sqlfile.Later, "table": sqlfile.Later})
	if err != nil {
		return readersSQL{}, err
	}
	var q readersSQL
	err = sqlfile.Assign("readers", st, map[string]*string{"revokeTable": &q.revokeTable,
		"revokeSchema": &q.revokeSchema, "otherReaders": &q.otherReaders})
	return q, err
}

// revokes is the batch that takes from role (valid, unquoted) every
// privilege on the schema and on each of usersync's tables in it.
func (q readersSQL) revokes(role string) string {
	r := schema.QuoteIdentifier(role)
	var stmts []string
	for _, t := range tableNames() {
		stmts = append(stmts, sqlfile.Fill(q.revokeTable, map[string]string{"role": r, "table": schema.QuoteIdentifier(t)}))
	}
	stmts = append(stmts, sqlfile.Fill(q.revokeSchema, map[string]string{"role": r}))
	return strings.Join(stmts, ";\n")
}

// tableNames is the catalog's tables and views, and schema_migrations:
// every table of usersync's in a schema.
func tableNames() []string {
	out := []string{"schema_migrations"}
	for _, t := range schema.Tables() {
		out = append(out, t.Name)
	}
	return out
}

// RevokeReader takes from role every privilege on schemaName and on
// usersync's tables in it: what an account's reader role that was replaced
// keeps otherwise. Its grants on other schemas stay.
func RevokeReader(ctx context.Context, pool *pgxpool.Pool, schemaName, role string) error {
	if err := schema.ValidateIdentifier(role); err != nil {
		return fmt.Errorf("reader role: %w", err)
	}
	q, err := newReadersSQL(schemaName)
	if err != nil {
		return err
	}
	var exists, canCreate bool
	m, err := newMigrateSQL(schemaName)
	if err != nil {
		return err
	}
	if err := pool.QueryRow(ctx, m.readerRole, role).Scan(&exists, &canCreate); err != nil {
		return fmt.Errorf("reading roles: %w", err)
	}
	if !exists {
		return nil // a role dropped since reads nothing
	}
	if _, err := pool.Exec(ctx, q.revokes(role)); err != nil {
		return fmt.Errorf("revoking %s's access to schema %s: %w", role, schemaName, err)
	}
	return nil
}

// OtherReader is a role, other than the reader role, granted SELECT on
// some of a schema's tables (or their columns).
type OtherReader struct {
	Role   string // "PUBLIC" for everybody
	Tables []string
}

// OtherReaders lists the roles other than role ("" for none) and the
// tables' owner granted read access to usersync's tables in schemaName:
// what usersync check names, since each of them reads the account.
func OtherReaders(ctx context.Context, pool *pgxpool.Pool, schemaName, role string) ([]OtherReader, error) {
	q, err := newReadersSQL(schemaName)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, q.otherReaders, role, schemaName, tableNames())
	if err != nil {
		return nil, fmt.Errorf("reading the grants on schema %s: %w", schemaName, err)
	}
	defer rows.Close()
	var out []OtherReader
	for rows.Next() {
		var r OtherReader
		if err := rows.Scan(&r.Role, &r.Tables); err != nil {
			return nil, fmt.Errorf("reading the grants on schema %s: %w", schemaName, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
