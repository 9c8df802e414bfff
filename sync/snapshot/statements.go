package snapshot

import (
	"embed"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// A snapshot's statements live as SQL in sql/snapshot.sql, under "-- name:
// x" lines (see sqlfile), rendered once per Writer;
// testdata/statements.golden.sql holds them, rendered for schema usersync
// with every table's SELECT (TestStatementsGolden).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// statements holds a Writer's statements, rendered for its schema.
type statements struct {
	schema                                                string // the schema's name, unquoted
	lock, settled, watermark, changes                     string
	jitOff, exportSnapshot, importSnapshot, relationStats string
	idRange, selectTable, selectBlocks, selectKeys        string
	selectKeyNull                                         string
}

func newStatements(schemaName string) (statements, error) {
	later := sqlfile.Later // see sql/snapshot.sql: filled as each statement is sent
	st, err := sqlfile.Load(sqlFiles, "snapshot", map[string]string{"schema": pgx.Identifier{schemaName}.Sanitize(),
		"snapshot_id": later, "columns": later, "table": later, "key": later})
	if err != nil {
		return statements{}, err
	}
	q := statements{schema: schemaName}
	err = sqlfile.Assign("snapshot", st, map[string]*string{
		"lock": &q.lock, "settled": &q.settled, "watermark": &q.watermark, "changes": &q.changes,
		"jitOff": &q.jitOff, "exportSnapshot": &q.exportSnapshot, "importSnapshot": &q.importSnapshot,
		"relationStats": &q.relationStats, "idRange": &q.idRange, "selectTable": &q.selectTable,
		"selectBlocks": &q.selectBlocks, "selectKeys": &q.selectKeys, "selectKeyNull": &q.selectKeyNull,
	})
	return q, err
}

// importing is the statement that imports the exported snapshot id.
func (q statements) importing(id string) string {
	return sqlfile.Fill(q.importSnapshot, map[string]string{"snapshot_id": "'" + strings.ReplaceAll(id, "'", "''") + "'"})
}

// reading is the query reading every column of t in chunk c, in catalog
// order, jsonb as its JSON text, and its parameters.
func (q statements) reading(t schema.Table, c chunk) (string, []any) {
	cols := make([]string, len(t.Columns))
	for i, col := range t.Columns {
		cols[i] = pgx.Identifier{col.Name}.Sanitize()
		if col.Type == "jsonb" {
			cols[i] += "::text"
		}
	}
	vars := map[string]string{"columns": strings.Join(cols, ", "), "table": pgx.Identifier{q.schema, t.Name}.Sanitize()}
	stmt := map[chunkKind]string{wholeTable: q.selectTable, blockRange: q.selectBlocks, keyRange: q.selectKeys, keyNull: q.selectKeyNull}[c.kind]
	if c.key != "" {
		vars["key"] = pgx.Identifier{c.key}.Sanitize()
	}
	return sqlfile.Fill(stmt, vars), c.args()
}
