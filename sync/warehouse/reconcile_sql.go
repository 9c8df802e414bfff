package warehouse

import (
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
)

// Temporary tables of a reconcile, in pg_temp of its dedicated connection.
const (
	reconcileScanTable  = "usersync_reconcile_scan"
	reconcileFetchTable = "usersync_reconcile_fetch"
)

// reconcileSQL holds a reconcile's statements, built from the catalog for
// one schema.
type reconcileSQL struct {
	dims              []string // dimension types, in the order of queueDeletedLinks' parameters
	create, drop      string
	index             string
	compare           string
	undelete          string
	queueChanged      string
	queueDeletedLinks string
	queueLinkage      string
	queueGone         string
	fetchBatch        string
	queued            string
	markDeleted       string
}

func newReconcileSQL(schemaName string, users tableSQL) (reconcileSQL, error) {
	q := reconcileSQL{dims: schema.DimensionTypes()}
	qs := schema.QuoteIdentifier(schemaName)
	st, err := loadStatements("reconcile", map[string]string{
		"schema": qs, "users": users.table,
		"scan": "pg_temp." + reconcileScanTable, "fetch": "pg_temp." + reconcileFetchTable,
		"scan_table": reconcileScanTable, "fetch_table": reconcileFetchTable,
		"missing": FetchMissing, "stale": FetchStale, "gone": FetchGone, "relinked": FetchRelinked,
		"hit_conditions": linkConditions(q.dims), "linkage_diff": linkageDiff(qs, q.dims),
	})
	if err != nil {
		return q, err
	}
	err = assignStatements("reconcile", st, map[string]*string{
		"drop": &q.drop, "create": &q.create, "index": &q.index, "compare": &q.compare, "undelete": &q.undelete,
		"queueChanged": &q.queueChanged, "queueDeletedLinks": &q.queueDeletedLinks, "queueLinkage": &q.queueLinkage,
		"queueGone": &q.queueGone, "fetchBatch": &q.fetchBatch, "queued": &q.queued, "markDeleted": &q.markDeleted,
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

// linkageDiff builds, from the catalog, the condition that a scanned user s
// (its links: relationship name → ids, see ScannedUser.Links) is linked to
// teams, roles or profiles otherwise than the users row u (schema q) holds:
// for each relationship to a dimension that the scan carried, a to-one
// column that differs, or an array column or user_teams (the teams
// relationship, kept in a table of its own) that holds another set of ids.
func linkageDiff(q string, dims []string) string {
	var cond []string
	for _, r := range schema.User().RelationshipsTo(dims...) {
		name := quoteList([]string{r.Name})
		sent := fmt.Sprintf("s.links ? %s", name)
		if !r.ToMany {
			cond = append(cond, fmt.Sprintf("(%s AND (s.links->%s->>0)::bigint IS DISTINCT FROM u.%s)",
				sent, name, schema.QuoteIdentifier(r.Column())))
			continue
		}
		stored := "coalesce(u." + schema.QuoteIdentifier(r.Column()) + ", '{}')"
		if r.OwnTable { // the only one is teams (user_teams)
			stored = "ARRAY(SELECT ut.team_id FROM " + q + ".user_teams ut WHERE ut.user_id = u.id)"
		}
		scanned := fmt.Sprintf("ARRAY(SELECT jsonb_array_elements_text(s.links->%s)::bigint)", name)
		cond = append(cond, fmt.Sprintf("(%s AND NOT (%s @> %s AND %s <@ %s))", sent, scanned, stored, scanned, stored))
	}
	return strings.Join(cond, "\n\t\tOR ")
}

func quoteList(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(out, ", ")
}
