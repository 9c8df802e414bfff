package pgrow

import (
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// Table holds the statements of one resource table, built once from the
// catalog for a schema, so the hot path only binds parameters.
type Table struct {
	Res     schema.Resource
	Name    string   // qualified table name
	Stage   string   // per-connection temp staging table name (unqualified: pg_temp)
	Cols    []Column // what COPY writes, in order (see rowColumns)
	Columns []string // their names
	ToOnes  int      // to-one id columns
	Hashed  bool     // the table has content_hash (users)

	CopyTable   string // binary COPY of columns into table
	CopyStage   string // the same into stage
	CreateStage string
	Upsert      string // returns (inserted, updated)
	Current     string // users only: (id, content_hash, linkage_hash, deleted, other_relationships, updated_at) of a set of ids
	CurrentFill string // (id, the stored value of each fill column) of a set of ids
	LiveCount   string
}

// NewTable builds the statements of res's table in schemaName.
func NewTable(schemaName string, res schema.Resource) (Table, error) {
	s := schema.QuoteIdentifier(schemaName)
	t := Table{Res: res, Name: s + "." + schema.QuoteIdentifier(res.Table), Hashed: res.Type == "user",
		Cols: ColumnsOf(res), ToOnes: len(res.ToOne())}
	t.Stage = schema.QuoteIdentifier("usersync_stage_" + schemaName + "_" + res.Table)
	fill := []string{"id"}
	for _, c := range t.Cols {
		t.Columns = append(t.Columns, c.name)
		if c.fill != nil {
			fill = append(fill, c.read)
		}
	}
	quoted := QuoteAll(t.Columns)

	var set []string
	for _, c := range quoted[1:] {
		if c == `"version_run_id"` {
			continue // set below, with the other version columns
		}
		set = append(set, c+" = EXCLUDED."+c)
	}
	if t.Hashed {
		// A row whose content changed starts a new version: a fresh id (the
		// column's default, evaluated for the proposed row), now, this run.
		for _, c := range []string{"version_id", "version_valid_from", "version_run_id"} {
			set = append(set, fmt.Sprintf("%[1]s = CASE WHEN t.content_hash <> EXCLUDED.content_hash THEN EXCLUDED.%[1]s ELSE t.%[1]s END", c))
		}
	}
	changed := "t.content_hash <> EXCLUDED.content_hash OR t.linkage_hash IS DISTINCT FROM EXCLUDED.linkage_hash"
	if !t.Hashed {
		// A dimension row is written only when it changed or came back:
		// either way a new version starts (the old one is archived first:
		// see sql/history.sql).
		set = append(set, "version_valid_from = now()")
		// A dimension row changed when any column did: attributes, to-one
		// ids or raw.
		changed = fmt.Sprintf("(%s) IS DISTINCT FROM (%s)", PrefixAll("t.", quoted[1:]), PrefixAll("EXCLUDED.", quoted[1:]))
	}
	st, err := sqlfile.Load(sqlFiles, "table", map[string]string{"table": t.Name, "stage": t.Stage,
		"columns": strings.Join(quoted, ", "), "set": strings.Join(set, ", "), "changed": changed,
		"fill_columns": strings.Join(fill, ", ")})
	if err != nil {
		return t, err
	}
	var current, currentFill string
	err = sqlfile.Assign("table", st, map[string]*string{"copyTable": &t.CopyTable, "copyStage": &t.CopyStage, "createStage": &t.CreateStage, "upsert": &t.Upsert,
		"current": &current, "currentFill": &currentFill, "liveCount": &t.LiveCount})
	if t.Hashed {
		t.Current = current
	}
	if len(fill) > 1 {
		t.CurrentFill = currentFill
	}
	return t, err
}

// QuoteAll quotes each name as an identifier.
func QuoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = schema.QuoteIdentifier(n)
	}
	return out
}

// PrefixAll joins names, each after prefix, with commas.
func PrefixAll(prefix string, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return strings.Join(out, ", ")
}
