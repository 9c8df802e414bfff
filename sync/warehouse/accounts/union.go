package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// unionMark starts the comment of a schema of union views: only such a
// schema is ever dropped.
const unionMark = "usersync union views:"

// ErrUnionNeedsPG15 says the server cannot run views with the reader's
// rights (security_invoker), so no union views are made.
var ErrUnionNeedsPG15 = errors.New("the union views need PostgreSQL 15 or later (security_invoker); none were made")

// UnionSchema is the schema of the union views of a fleet whose default
// schema is fleetSchema.
func UnionSchema(fleetSchema string) string { return fleetSchema + "_all" }

// Member is an account the union views unite.
type Member struct{ Name, Schema string }

type unionStatements struct {
	serverVersion, owner, columns, drop, create, comment, view, roleExists, grantUsage, grantSelect string
}

func newUnionStatements() (unionStatements, error) {
	var q unionStatements
	st, err := sqlfile.Load(sqlFiles, "union", map[string]string{"union": sqlfile.Later, "view": sqlfile.Later,
		"body": sqlfile.Later, "role": sqlfile.Later})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("union", st, map[string]*string{"serverVersion": &q.serverVersion, "owner": &q.owner,
		"columns": &q.columns, "drop": &q.drop, "create": &q.create, "comment": &q.comment, "view": &q.view,
		"roleExists": &q.roleExists, "grantUsage": &q.grantUsage, "grantSelect": &q.grantSelect})
}

// RefreshUnion remakes the schema unionSchema: one view per analysts' table
// of the catalog that unites the members' tables, an account column first
// (a column a member's table lacks reads NULL), readable by readerRole
// ("" for none). Fewer than two members drop it: there is nothing to unite.
// It refuses to touch a schema of that name that is not usersync's. Call it
// inside warehouse.WithMigrationLock.
func RefreshUnion(ctx context.Context, pool *pgxpool.Pool, unionSchema, readerRole string, members []Member) error {
	q, err := newUnionStatements()
	if err != nil {
		return err
	}
	fill := map[string]string{"union": schema.QuoteIdentifier(unionSchema), "role": schema.QuoteIdentifier(readerRole)}
	var comment string
	err = pool.QueryRow(ctx, q.owner, unionSchema).Scan(&comment)
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("reading schema %s: %w", unionSchema, err)
	}
	ours := exists && strings.HasPrefix(comment, unionMark)
	if len(members) < 2 {
		if !ours {
			return nil // nothing to unite, nothing of usersync's to drop
		}
		if _, err := pool.Exec(ctx, sqlfile.Fill(q.drop, fill)); err != nil {
			return fmt.Errorf("dropping the union views: %w", err)
		}
		return nil
	}
	if exists && !ours {
		return fmt.Errorf("schema %s exists and is not usersync's union views; rename or drop it", unionSchema)
	}
	var version int
	if err := pool.QueryRow(ctx, q.serverVersion).Scan(&version); err != nil {
		return fmt.Errorf("reading the server's version: %w", err)
	}
	if version < 150000 {
		return ErrUnionNeedsPG15
	}
	have, err := memberColumns(ctx, pool, q, members)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return makeUnion(ctx, tx, q, fill, readerRole, unionViews(members, have))
	})
}

func makeUnion(ctx context.Context, tx pgx.Tx, q unionStatements, fill map[string]string, role string, views map[string]string) error {
	stmts := []string{sqlfile.Fill(q.drop, fill), sqlfile.Fill(q.create, fill), sqlfile.Fill(q.comment, fill)}
	for _, t := range schema.Tables() {
		if body, ok := views[t.Name]; ok {
			stmts = append(stmts, sqlfile.Fill(q.view, map[string]string{"union": fill["union"],
				"view": schema.QuoteIdentifier(t.Name), "body": body}))
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("making the union views: %w", err)
		}
	}
	if role == "" {
		return nil
	}
	var ok bool
	if err := tx.QueryRow(ctx, q.roleExists, role).Scan(&ok); err != nil || !ok {
		return err // a missing role: migrate says so already
	}
	for _, s := range []string{q.grantUsage, q.grantSelect} {
		if _, err := tx.Exec(ctx, sqlfile.Fill(s, fill)); err != nil {
			return fmt.Errorf("granting %s the union views: %w", role, err)
		}
	}
	return nil
}

// memberColumns maps schema.table to the set of its columns.
func memberColumns(ctx context.Context, db DBTX, q unionStatements, members []Member) (map[string]map[string]bool, error) {
	schemas := make([]string, len(members))
	for i, m := range members {
		schemas[i] = m.Schema
	}
	rows, err := db.Query(ctx, q.columns, schemas)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts' columns: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var s, t, c string
		if err := rows.Scan(&s, &t, &c); err != nil {
			return nil, fmt.Errorf("reading the accounts' columns: %w", err)
		}
		if out[s+"."+t] == nil {
			out[s+"."+t] = map[string]bool{}
		}
		out[s+"."+t][c] = true
	}
	return out, rows.Err()
}

// unionViews is the query of each analysts' table's view: one SELECT per
// member whose schema has the table, in the members' order.
func unionViews(members []Member, have map[string]map[string]bool) map[string]string {
	out := map[string]string{}
	for _, t := range schema.Tables() {
		if !t.Analysts {
			continue
		}
		var parts []string
		for _, m := range members {
			cols := have[m.Schema+"."+t.Name]
			if cols == nil {
				continue // not migrated yet: migrate remakes the views after
			}
			sel := []string{schema.QuoteLiteral(m.Name) + "::text AS account"}
			for _, c := range t.Columns {
				if c.Bookkeeping {
					continue
				}
				col := schema.QuoteIdentifier(c.Name)
				if !cols[c.Name] {
					col = "NULL::" + c.Type + " AS " + col
				}
				sel = append(sel, col)
			}
			parts = append(parts, "SELECT "+strings.Join(sel, ", ")+" FROM "+
				schema.QuoteIdentifier(m.Schema)+"."+schema.QuoteIdentifier(t.Name))
		}
		if len(parts) > 0 {
			out[t.Name] = strings.Join(parts, "\nUNION ALL ")
		}
	}
	return out
}
