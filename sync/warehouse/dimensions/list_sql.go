package dimensions

import (
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// listSQL holds the statements of a streamed dimension load (see
// Load) of one table. Its three staging tables are session
// temporary tables of the load's dedicated connection, named after the
// table so that statements cached on a pooled connection for one dimension
// never meet another dimension's columns:
//
//   - rows: the typed rows of every page, with the order they arrived in
//     (seq) and their updatedAt, so the whole list is deduplicated at the end
//     exactly as dedupe does for one slice;
//   - seen: every id the API returned, quarantined ones included;
//   - bad: the quarantined resources, in the order they arrived.
type listSQL struct {
	rows, seen, bad       string         // pg_temp-qualified names, for statements
	rowsID, seenID, badID pgx.Identifier // the same, for COPY
	rowColumns            []string       // COPY columns of rows: the table's, then seq and updatedAt
	copyRows              string         // binary COPY of rowColumns into rows

	create  string // drops leftovers, creates the three staging tables
	drop    string
	stage   string // deduplicated rows into the table's staging table; tag: rows
	delete  string // anti-join: live rows whose id was not seen
	resolve string // $1 type: resolves quarantine records of ids typed this time
	insert  string // $1 run id: the quarantined resources of the list
}

func (s *Store) listSQL(t pgrow.Table) (listSQL, error) {
	base := "usersync_dim_" + t.Res.Table
	d := listSQL{
		rowsID: pgx.Identifier{"pg_temp", base + "_rows"},
		seenID: pgx.Identifier{"pg_temp", base + "_seen"},
		badID:  pgx.Identifier{"pg_temp", base + "_bad"},
	}
	d.rows, d.seen, d.bad = d.rowsID.Sanitize(), d.seenID.Sanitize(), d.badID.Sanitize()
	d.rowColumns = append(append(d.rowColumns, t.Columns...), "usersync_seq", "usersync_updated_at")
	st, err := sqlfile.Load(sqlFiles, "list", map[string]string{"schema": s.q, "table": t.Name, "stage": t.Stage,
		"columns": strings.Join(pgrow.QuoteAll(t.Columns), ", "), "rows": d.rows, "seen": d.seen, "bad": d.bad})
	if err != nil {
		return d, err
	}
	return d, sqlfile.Assign("list", st, map[string]*string{"copyRows": &d.copyRows, "drop": &d.drop, "create": &d.create, "stage": &d.stage,
		"delete": &d.delete, "resolve": &d.resolve, "insert": &d.insert})
}
