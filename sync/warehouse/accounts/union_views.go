package accounts

import (
	"context"
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// viewColumn is a column of a union view as PostgreSQL has it.
type viewColumn struct{ name, typ string }

// memberColumns maps schema.table to its columns, each true when role (""
// for none) may read it.
func memberColumns(ctx context.Context, db DBTX, q unionStatements, members []Member, role string) (map[string]map[string]bool, error) {
	schemas := make([]string, len(members))
	for i, m := range members {
		schemas[i] = m.Schema
	}
	rows, err := db.Query(ctx, q.columns, schemas, role)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts' columns: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]bool{}
	for rows.Next() {
		var s, t, c string
		var readable bool
		if err := rows.Scan(&s, &t, &c, &readable); err != nil {
			return nil, fmt.Errorf("reading the accounts' columns: %w", err)
		}
		if out[s+"."+t] == nil {
			out[s+"."+t] = map[string]bool{}
		}
		out[s+"."+t][c] = readable
	}
	return out, rows.Err()
}

// unionViews is the query of each analysts' table's view: one SELECT per
// member whose schema has the table and of which the reader may read a
// column (the statement member), in the members' order, or a SELECT of no
// row when there is none. Its columns are old's (the view as it is), in
// their order, then the catalog's new ones: a view is replaced in place.
func unionViews(q unionStatements, members []Member, have map[string]map[string]bool, old map[string][]viewColumn) map[string]string {
	out := map[string]string{}
	for _, t := range schema.Tables() {
		if !t.Analysts {
			continue
		}
		cols := viewColumns(t, old[t.Name])
		var parts []string
		for _, m := range members {
			readable := have[m.Schema+"."+t.Name]
			if !anyOf(readable, cols) {
				continue // not migrated yet, or the reader may read none of it
			}
			parts = append(parts, sqlfile.Fill(q.member, map[string]string{"account": schema.QuoteLiteral(m.Name),
				"columns": selectList(cols, readable), "schema": schema.QuoteIdentifier(m.Schema), "table": schema.QuoteIdentifier(t.Name)}))
		}
		if len(parts) == 0 {
			out[t.Name] = sqlfile.Fill(q.empty, map[string]string{"columns": selectList(cols, nil)})
			continue
		}
		out[t.Name] = strings.Join(parts, "\nUNION ALL ")
	}
	return out
}

// viewColumns is the columns of table t's view after the account column:
// those the view has, in order (of the catalog's type when the catalog
// has them), then the catalog's others.
func viewColumns(t schema.Table, old []viewColumn) []viewColumn {
	var cols []viewColumn
	types := map[string]string{}
	for _, c := range t.Columns {
		if !c.Bookkeeping {
			types[c.Name] = c.Type
		}
	}
	seen := map[string]bool{"account": true}
	for _, c := range old {
		if seen[c.name] {
			continue
		}
		seen[c.name] = true
		if typ, ok := types[c.name]; ok {
			c.typ = typ
		}
		cols = append(cols, c)
	}
	for _, c := range t.Columns {
		if !c.Bookkeeping && !seen[c.Name] {
			cols = append(cols, viewColumn{c.Name, c.Type})
		}
	}
	return cols
}

// anyOf says whether readable holds one of cols as readable.
func anyOf(readable map[string]bool, cols []viewColumn) bool {
	for _, c := range cols {
		if readable[c.name] {
			return true
		}
	}
	return false
}

// selectList selects cols, each a typed NULL unless readable says it may
// be read.
func selectList(cols []viewColumn, readable map[string]bool) string {
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = schema.QuoteIdentifier(c.name)
		if !readable[c.name] {
			sel[i] = "NULL::" + c.typ + " AS " + sel[i]
		}
	}
	return strings.Join(sel, ", ")
}
