package dimensions

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/usersync/usersync/sync/warehouse/internal/pgcopy"
	"github.com/usersync/usersync/sync/warehouse/internal/pgrow"
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

func (s *Store) listSQL(t pgrow.Table) listSQL {
	base := "usersync_dim_" + t.Res.Table
	d := listSQL{
		rowsID: pgx.Identifier{"pg_temp", base + "_rows"},
		seenID: pgx.Identifier{"pg_temp", base + "_seen"},
		badID:  pgx.Identifier{"pg_temp", base + "_bad"},
	}
	d.rows, d.seen, d.bad = d.rowsID.Sanitize(), d.seenID.Sanitize(), d.badID.Sanitize()
	d.rowColumns = append(append(d.rowColumns, t.Columns...), "usersync_seq", "usersync_updated_at")
	d.copyRows = pgcopy.Statement(d.rows, d.rowColumns)
	cols := strings.Join(pgrow.QuoteAll(t.Columns), ", ")
	d.drop = fmt.Sprintf(`DROP TABLE IF EXISTS %s, %s, %s`, d.rows, d.seen, d.bad)
	d.create = d.drop + ";\n" +
		fmt.Sprintf(`CREATE TEMP TABLE %s AS SELECT %s, 0::bigint AS usersync_seq, NULL::timestamptz AS usersync_updated_at FROM %s WITH NO DATA;
CREATE TEMP TABLE %s (id bigint NOT NULL);
CREATE TEMP TABLE %s (seq bigint NOT NULL, resource_type text NOT NULL, resource_id text, field text, error text NOT NULL, raw jsonb NOT NULL)`,
			d.rows, cols, t.Name, d.seen, d.bad)
	// One row per id: the greatest updatedAt, the last one to arrive on
	// ties (a missing updatedAt sorts first), as dedupe keeps.
	d.stage = fmt.Sprintf(`INSERT INTO %s (%s) SELECT DISTINCT ON (id) %s FROM %s
ORDER BY id, usersync_updated_at DESC NULLS LAST, usersync_seq DESC`, t.Stage, cols, cols, d.rows)
	d.delete = fmt.Sprintf(`UPDATE %s AS t SET deleted_at = now()
WHERE t.deleted_at IS NULL AND NOT EXISTS (SELECT FROM %s AS seen WHERE seen.id = t.id)`, t.Name, d.seen)
	d.resolve = fmt.Sprintf(`UPDATE %s.quarantine SET resolved_at = now()
WHERE resolved_at IS NULL AND resource_type = $1 AND resource_id IN (SELECT id::text FROM %s)`, s.q, d.rows)
	d.insert = fmt.Sprintf(`INSERT INTO %s.quarantine (run_id, resource_type, resource_id, field, error, raw)
SELECT $1::bigint, resource_type, resource_id, field, error, raw FROM %s ORDER BY seq`, s.q, d.bad)
	return d
}
