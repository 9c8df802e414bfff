package pgrow

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgcopy"
)

// Column is one column a row's COPY writes into a resource table. The
// table's list of them (rowColumns) is the only place its column order is
// declared: the COPY statements, the staging upsert, the read of stored
// values and the encoder all derive from it, and its types come from the
// catalog (schema.Tables).
type Column struct {
	name string
	typ  pgcopy.Type
	// put appends the column's field of r, written by w.
	put func(b []byte, r *Row, w Writer) ([]byte, error)
	// fill, when set, marks a column a row may leave unsent (the stored
	// value is kept): it returns the scan target of the stored value in f,
	// read with the expression read.
	fill func(f *Fill) any
	read string
}

// ColumnsOf returns the columns of res's table that a row's COPY writes:
// id, the attributes, the to-one ids, raw and, for users, the hashes, data
// connections, version run and linkage columns. Columns the database fills
// (synced_at, deleted_at, the version id and start) are not among them.
func ColumnsOf(res schema.Resource) []Column {
	cat, _ := schema.TableNamed(res.Table)
	types := make(map[string]pgcopy.Type, len(cat.Columns))
	for _, c := range cat.Columns {
		types[c.Name] = pgcopy.ColumnType(c.Type)
	}
	cols := []Column{{name: "id", put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
		return pgcopy.AppendBigint(b, r.Normalized.ID), nil
	}}}
	for j, a := range res.Attributes {
		typ := types[a.Column()] // pgcopy.Unknown, refusing every value, for a column the catalog lacks
		cols = append(cols, Column{name: a.Column(), put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
			return pgcopy.AppendValue(b, typ, r.Normalized.Values[j])
		}})
	}
	for j, rel := range res.ToOne() {
		cols = append(cols, Column{name: rel.Column(), read: schema.QuoteIdentifier(rel.Column()),
			put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
				if o := r.Normalized.ToOne[j]; o.Valid {
					return pgcopy.AppendBigint(b, o.ID), nil
				}
				return pgcopy.AppendNull(b), nil
			},
			fill: func(f *Fill) any { return &f.ToOne[j] }})
	}
	cols = append(cols, Column{name: "raw", put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
		return pgcopy.AppendJSONB(b, r.Normalized.Raw), nil
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
func userColumns(res schema.Resource) []Column {
	cols := []Column{
		{name: "content_hash", put: func(b []byte, r *Row, _ Writer) ([]byte, error) { return pgcopy.AppendBytea(b, r.Content), nil }},
		{name: "linkage_hash", put: func(b []byte, r *Row, _ Writer) ([]byte, error) { return pgcopy.AppendBytea(b, r.Linkage), nil }},
		{name: "data_connections", read: "data_connections::text",
			put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
				return pgcopy.AppendJSONB(b, r.Normalized.DataConnections), nil
			},
			fill: func(f *Fill) any { return &f.DataConnections }},
		{name: "version_run_id", put: func(b []byte, _ *Row, w Writer) ([]byte, error) {
			return pgcopy.AppendNullableBigint(b, w.Run), nil
		}},
	}
	for k, rel := range res.ArrayLinks() {
		cols = append(cols, Column{name: rel.Column(), read: schema.QuoteIdentifier(rel.Column()),
			put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
				return pgcopy.AppendBigintArray(b, r.Links.Arrays[k]), nil
			},
			fill: func(f *Fill) any { return &f.Arrays[k] }})
	}
	return append(cols, Column{name: "other_relationships", put: func(b []byte, r *Row, _ Writer) ([]byte, error) {
		return pgcopy.AppendJSONB(b, r.Links.Other), nil
	}}, Column{name: "pii_policy_id", put: func(b []byte, _ *Row, w Writer) ([]byte, error) {
		return pgcopy.AppendNullableBigint(b, w.Policy), nil
	}})
}

// Writer is what writes a page's rows: the run (0: none) and the
// personal-data policy its rows were rewritten under (pii_policies.policy_id;
// 0: not recorded, stored as null).
type Writer struct{ Run, Policy int64 }

// Copy copies rows into t's table (or a table shaped like it) with sql,
// a binary COPY of t's columns.
func Copy(ctx context.Context, tx pgx.Tx, sql string, t *Table, rows []Row, w Writer) (int64, error) {
	return pgcopy.Binary(ctx, tx, sql, len(rows), func(b []byte, i int) ([]byte, error) {
		return t.AppendRow(pgcopy.AppendFieldCount(b, len(t.Cols)), &rows[i], w)
	})
}

// AppendRow appends r's fields, one per column of the table.
func (t *Table) AppendRow(b []byte, r *Row, w Writer) ([]byte, error) {
	if len(r.Normalized.Values) != len(t.Res.Attributes) || len(r.Normalized.ToOne) != t.ToOnes {
		return b, fmt.Errorf("encoding %s %d: %d attributes and %d to-one ids for %d and %d columns",
			t.Res.Type, r.Normalized.ID, len(r.Normalized.Values), len(r.Normalized.ToOne), len(t.Res.Attributes), t.ToOnes)
	}
	for _, c := range t.Cols {
		var err error
		if b, err = c.put(b, r, w); err != nil {
			return b, fmt.Errorf("encoding %s %d, column %s: %w", t.Res.Type, r.Normalized.ID, c.name, err)
		}
	}
	return b, nil
}
