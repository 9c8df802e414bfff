package warehouse

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/internal/pgcopy"
)

// rowColumn is one column a row's COPY writes into a resource table. The
// table's list of them (rowColumns) is the only place its column order is
// declared: the COPY statements, the staging upsert, the read of stored
// values and the encoder all derive from it, and its types come from the
// catalog (schema.Tables).
type rowColumn struct {
	name string
	typ  pgcopy.Type
	// put appends the column's field of r, written by w.
	put func(b []byte, r *loadRow, w writer) ([]byte, error)
	// fill, when set, marks a column a row may leave unsent (the stored
	// value is kept): it returns the scan target of the stored value in f,
	// read with the expression read.
	fill func(f *storedFill) any
	read string
}

// rowColumns returns the columns of res's table that a row's COPY writes:
// id, the attributes, the to-one ids, raw and, for users, the hashes, data
// connections, version run and linkage columns. Columns the database fills
// (synced_at, deleted_at, the version id and start) are not among them.
func rowColumns(res schema.Resource) []rowColumn {
	cat, _ := schema.TableNamed(res.Table)
	types := make(map[string]pgcopy.Type, len(cat.Columns))
	for _, c := range cat.Columns {
		types[c.Name] = pgcopy.ColumnType(c.Type)
	}
	cols := []rowColumn{{name: "id", put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
		return pgcopy.AppendBigint(b, r.row.ID), nil
	}}}
	for j, a := range res.Attributes {
		typ := types[a.Column()] // pgcopy.Unknown, refusing every value, for a column the catalog lacks
		cols = append(cols, rowColumn{name: a.Column(), put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
			return pgcopy.AppendValue(b, typ, r.row.Values[j])
		}})
	}
	for j, rel := range res.ToOne() {
		cols = append(cols, rowColumn{name: rel.Column(), read: schema.QuoteIdentifier(rel.Column()),
			put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
				if o := r.row.ToOne[j]; o.Valid {
					return pgcopy.AppendBigint(b, o.ID), nil
				}
				return pgcopy.AppendNull(b), nil
			},
			fill: func(f *storedFill) any { return &f.toOne[j] }})
	}
	cols = append(cols, rowColumn{name: "raw", put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
		return pgcopy.AppendJSONB(b, r.row.Raw), nil
	}})
	if res.Type == "user" {
		cols = append(cols, userColumns(res)...)
	}
	for i := range cols {
		cols[i].typ = types[cols[i].name]
	}
	return cols
}

// userColumns are the columns only users have: what decides whether a row
// changed, the current version's run, the linkage besides teams, and the
// personal-data policy the row was written under.
func userColumns(res schema.Resource) []rowColumn {
	cols := []rowColumn{
		{name: "content_hash", put: func(b []byte, r *loadRow, _ writer) ([]byte, error) { return pgcopy.AppendBytea(b, r.content), nil }},
		{name: "linkage_hash", put: func(b []byte, r *loadRow, _ writer) ([]byte, error) { return pgcopy.AppendBytea(b, r.linkage), nil }},
		{name: "data_connections", read: "data_connections::text",
			put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
				return pgcopy.AppendJSONB(b, r.row.DataConnections), nil
			},
			fill: func(f *storedFill) any { return &f.dataConnections }},
		{name: "version_run_id", put: func(b []byte, _ *loadRow, w writer) ([]byte, error) {
			return pgcopy.AppendNullableBigint(b, w.run), nil
		}},
	}
	for k, rel := range res.ArrayLinks() {
		cols = append(cols, rowColumn{name: rel.Column(), read: schema.QuoteIdentifier(rel.Column()),
			put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
				return pgcopy.AppendBigintArray(b, r.links.arrays[k]), nil
			},
			fill: func(f *storedFill) any { return &f.arrays[k] }})
	}
	return append(cols, rowColumn{name: "other_relationships", put: func(b []byte, r *loadRow, _ writer) ([]byte, error) {
		return pgcopy.AppendJSONB(b, r.links.other), nil
	}}, rowColumn{name: "pii_policy_id", put: func(b []byte, _ *loadRow, w writer) ([]byte, error) {
		return pgcopy.AppendNullableBigint(b, w.policy), nil
	}})
}

// writer is what writes a page's rows: the run (0: none) and the
// personal-data policy its rows were rewritten under (pii_policies.policy_id;
// 0: not recorded, stored as null).
type writer struct{ run, policy int64 }

// copyRows copies rows into t's table (or a table shaped like it) with sql,
// a binary COPY of t's columns.
func copyRows(ctx context.Context, tx pgx.Tx, sql string, t *tableSQL, rows []loadRow, w writer) (int64, error) {
	return pgcopy.Binary(ctx, tx, sql, len(rows), func(b []byte, i int) ([]byte, error) {
		return t.appendRow(pgcopy.AppendFieldCount(b, len(t.cols)), &rows[i], w)
	})
}

// appendRow appends r's fields, one per column of the table.
func (t *tableSQL) appendRow(b []byte, r *loadRow, w writer) ([]byte, error) {
	if len(r.row.Values) != len(t.res.Attributes) || len(r.row.ToOne) != t.toOnes {
		return b, fmt.Errorf("encoding %s %d: %d attributes and %d to-one ids for %d and %d columns",
			t.res.Type, r.row.ID, len(r.row.Values), len(r.row.ToOne), len(t.res.Attributes), t.toOnes)
	}
	for _, c := range t.cols {
		var err error
		if b, err = c.put(b, r, w); err != nil {
			return b, fmt.Errorf("encoding %s %d, column %s: %w", t.res.Type, r.row.ID, c.name, err)
		}
	}
	return b, nil
}
