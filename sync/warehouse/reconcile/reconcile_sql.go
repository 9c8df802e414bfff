package reconcile

import (
	"embed"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Tables of a reconcile: the fetch queue in pg_temp of its dedicated
// connection, the id walk in the warehouse's schema (it outlives an attempt).
const (
	reconcileScanTable  = "reconcile_scan"
	reconcileWalkTable  = "reconcile_walk"
	reconcileFetchTable = "usersync_reconcile_fetch"
)

// statements holds a reconcile's statements, built from the catalog for
// one schema.
type statements struct {
	dims                                      []string // dimension types, in the order of queueDeletedLinks' parameters
	linkColumns                               []string // the scan's columns of schema.DimensionLinks(), in order
	scanTable                                 pgx.Identifier
	create, drop                              string
	startWalk                                 string
	beginWalk                                 string
	readWalk                                  string
	recordPage                                string
	addRows                                   string
	endWalk                                   string
	index                                     string
	compare                                   string
	undelete                                  string
	queueChanged                              string
	queueDeletedLinks                         string
	queueLinkage                              string
	queueGone                                 string
	fetchBatch                                string
	queued                                    string
	markDeleted                               string
	deletedDimensionIDs, restoredDimensionIDs string
}

func newStatements(schemaName string) (statements, error) {
	q := statements{dims: schema.DimensionTypes(), scanTable: pgx.Identifier{schemaName, reconcileScanTable}}
	users, err := pgrow.NewTable(schemaName, schema.User())
	if err != nil {
		return q, err
	}
	qs := schema.QuoteIdentifier(schemaName)
	var defs []string
	for _, r := range schema.DimensionLinks() {
		col := scanLinkColumn(r)
		q.linkColumns = append(q.linkColumns, col)
		defs = append(defs, ", "+schema.QuoteIdentifier(col)+" bigint[]")
	}
	st, err := sqlfile.Load(sqlFiles, "reconcile", map[string]string{
		"schema": qs, "users": users.Name,
		"scan": qs + "." + reconcileScanTable, "walk": qs + "." + reconcileWalkTable,
		"fetch": "pg_temp." + reconcileFetchTable, "fetch_table": reconcileFetchTable,
		"missing": fetchMissing, "stale": fetchStale, "gone": fetchGone, "relinked": fetchRelinked,
		"hit_conditions": linkConditions(q.dims), "linkage_diff": linkageDiff(), "link_columns": strings.Join(defs, ""),
		"deleted_dimension_ids": deletedDimensionIDs(qs), "dimension_versions": dimensionVersions(qs),
	})
	if err != nil {
		return q, err
	}
	err = sqlfile.Assign("reconcile", st, map[string]*string{
		"drop": &q.drop, "create": &q.create, "index": &q.index, "compare": &q.compare, "undelete": &q.undelete,
		"queueChanged": &q.queueChanged, "queueDeletedLinks": &q.queueDeletedLinks, "queueLinkage": &q.queueLinkage,
		"queueGone": &q.queueGone, "fetchBatch": &q.fetchBatch, "queued": &q.queued, "markDeleted": &q.markDeleted,
		"startWalk": &q.startWalk, "beginWalk": &q.beginWalk, "readWalk": &q.readWalk, "recordPage": &q.recordPage,
		"addRows": &q.addRows, "endWalk": &q.endWalk,
		"deletedDimensionIDs": &q.deletedDimensionIDs, "restoredDimensionIDs": &q.restoredDimensionIDs,
	})
	return q, err
}

// linkConditions builds, from the catalog, the condition that finds the
// users linked to a deleted dimension id ($n: the ids of dims[n-1]): a
// to-one column (role_id, profile_id), an array column
// (direct_assigned_team_ids...) or an other_relationships element of a
// related type that is a dimension. user_teams is left to the membership
// pass.
func linkConditions(dims []string) string {
	param := map[string]int{}
	for i, typ := range dims {
		param[typ] = i + 1
	}
	var cond []string
	for _, r := range schema.User().RelationshipsTo(dims...) {
		if r.OwnTable {
			continue
		}
		col := "u." + schema.QuoteIdentifier(r.Column())
		if r.ToMany {
			cond = append(cond, fmt.Sprintf("%s && $%d::bigint[]", col, param[r.RelatedType]))
			continue
		}
		cond = append(cond, fmt.Sprintf("%s = ANY($%d::bigint[])", col, param[r.RelatedType]))
	}
	var other []string
	for _, typ := range dims {
		other = append(other, fmt.Sprintf("(e.value->>'type' = '%s' AND (e.value->>'id')::bigint = ANY($%d::bigint[]))", typ, param[typ]))
	}
	cond = append(cond, `EXISTS (SELECT 1 FROM jsonb_each(u.other_relationships) AS o, jsonb_array_elements(o.value) AS e
		WHERE `+strings.Join(other, " OR ")+`)`)
	return strings.Join(cond, "\n\t\tOR ")
}

// deletedDimensionIDs builds, from the catalog, the union of the (type, id)
// of every dimension row marked deleted.
func deletedDimensionIDs(qs string) string {
	var parts []string
	for _, r := range schema.Dimensions() {
		parts = append(parts, fmt.Sprintf("SELECT '%s', id FROM %s.%s WHERE deleted_at IS NOT NULL", r.Type, qs, schema.QuoteIdentifier(r.Table)))
	}
	return strings.Join(parts, "\nUNION ALL ")
}

// dimensionVersions builds, from the catalog, the union of every
// dimension's versions with the end of the version before and whether the
// id is live; the first part names the columns.
func dimensionVersions(qs string) string {
	var parts []string
	for i, r := range schema.Dimensions() {
		key := r.Type + "_id"
		names := []string{"", "", "", ""}
		if i == 0 {
			names = []string{" AS type", " AS id", " AS prev_to", " AS live"}
		}
		parts = append(parts, fmt.Sprintf("\tSELECT '%s'%s, %s%s, valid_from, lag(valid_to) OVER (PARTITION BY %s ORDER BY valid_from)%s,\n"+
			"\t\tbool_or(valid_to IS NULL) OVER (PARTITION BY %s)%s\n\tFROM %s.%s",
			r.Type, names[0], key, names[1], key, names[2], key, names[3], qs, schema.QuoteIdentifier(r.Type+"_versions")))
	}
	return strings.Join(parts, "\n\tUNION ALL\n")
}

// scanLinkColumn is the scan's column of a user relationship to a
// dimension: the ids the API sent (one at most for a to-one), NULL when it
// sent no data.
func scanLinkColumn(r schema.Relationship) string {
	return "link_" + schema.ColumnName(r.Name)
}

// linkageDiff builds, from the catalog, the condition that a scanned user s
// is linked to teams, roles or profiles otherwise than the users row u
// holds: for each relationship to a dimension that the scan carried, a
// to-one column that differs, or an array column or user_teams (the teams
// relationship, kept in a table of its own; m.team_ids, the user's rows
// aggregated) that holds another set of ids. Array operators only, no
// subquery per user: a million users are compared in one pass.
func linkageDiff() string {
	var cond []string
	for _, r := range schema.DimensionLinks() {
		scanned := "s." + schema.QuoteIdentifier(scanLinkColumn(r))
		stored := "u." + schema.QuoteIdentifier(r.Column())
		switch {
		case !r.ToMany:
			cond = append(cond, fmt.Sprintf("(%s IS NOT NULL AND %s[1] IS DISTINCT FROM %s)", scanned, scanned, stored))
		case r.OwnTable: // the only one is teams: user_teams, aggregated by queueLinkage as m.team_ids
			stored = "m.team_ids"
			fallthrough
		default:
			cond = append(cond, fmt.Sprintf("(%s IS NOT NULL AND NOT (%s @> coalesce(%s, '{}') AND %s <@ coalesce(%s, '{}')))",
				scanned, scanned, stored, scanned, stored))
		}
	}
	return strings.Join(cond, "\n\t\tOR ")
}
