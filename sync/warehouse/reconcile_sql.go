package warehouse

import (
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
)

// Temporary tables of a reconcile, in pg_temp of its dedicated connection.
const (
	reconcileScanTable   = "usersync_reconcile_scan"
	reconcileFetchTable  = "usersync_reconcile_fetch"
	reconcileLinkedTable = "usersync_reconcile_linked"
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
	queueLinked       string
	queueGone         string
	fetchBatch        string
	queued            string
	markDeleted       string
}

func newReconcileSQL(schemaName string, users tableSQL) (reconcileSQL, error) {
	q := reconcileSQL{dims: dimensionTypes()}
	hit, restored := linkConditions(schema.QuoteIdentifier(schemaName), q.dims)
	st, err := loadStatements("reconcile", map[string]string{
		"schema": schema.QuoteIdentifier(schemaName), "users": users.table,
		"scan": "pg_temp." + reconcileScanTable, "fetch": "pg_temp." + reconcileFetchTable, "linked": "pg_temp." + reconcileLinkedTable,
		"scan_table": reconcileScanTable, "fetch_table": reconcileFetchTable, "linked_table": reconcileLinkedTable,
		"missing": FetchMissing, "stale": FetchStale, "gone": FetchGone, "relinked": FetchRelinked,
		"hit_conditions": hit, "restored_diff": restored,
	})
	if err != nil {
		return q, err
	}
	err = assignStatements("reconcile", st, map[string]*string{
		"drop": &q.drop, "create": &q.create, "index": &q.index, "compare": &q.compare, "undelete": &q.undelete,
		"queueChanged": &q.queueChanged, "queueDeletedLinks": &q.queueDeletedLinks, "queueLinked": &q.queueLinked,
		"queueGone": &q.queueGone, "fetchBatch": &q.fetchBatch, "queued": &q.queued, "markDeleted": &q.markDeleted,
	})
	return q, err
}

// linkConditions builds, from the catalog, the conditions of the statements
// that queue users whose linkage to a dimension disagrees with the API: a
// to-one column (role_id, profile_id), an array column
// (direct_assigned_team_ids...) or an other_relationships element of a
// related type that is a dimension. user_teams is left to the membership
// pass. hit finds the users linked to a deleted dimension id ($n: the ids
// of dims[n-1]); restored the members of restored dimensions whose linkage
// is out of date.
func linkConditions(q string, dims []string) (hit, restored string) {
	param := map[string]int{}
	for i, typ := range dims {
		param[typ] = i + 1
	}
	var toOneDiff, cond []string
	for _, r := range schema.User().Relationships {
		n, ok := param[r.RelatedType]
		if !ok || r.OwnTable {
			continue
		}
		col := "u." + schema.QuoteIdentifier(r.Column())
		if r.ToMany {
			cond = append(cond, fmt.Sprintf("%s && $%d::bigint[]", col, n))
			continue
		}
		cond = append(cond, fmt.Sprintf("%s = ANY($%d::bigint[])", col, n))
		toOneDiff = append(toOneDiff, fmt.Sprintf("(l.related_type = '%s' AND %s IS DISTINCT FROM l.target)", r.RelatedType, col))
	}
	var other []string
	for _, typ := range dims {
		other = append(other, fmt.Sprintf("(e.value->>'type' = '%s' AND (e.value->>'id')::bigint = ANY($%d::bigint[]))", typ, param[typ]))
	}
	cond = append(cond, `EXISTS (SELECT 1 FROM jsonb_each(u.other_relationships) AS o, jsonb_array_elements(o.value) AS e
		WHERE `+strings.Join(other, " OR ")+`)`)
	manyOnly := `NOT EXISTS (
		SELECT 1 FROM ` + q + `.user_relationships ur WHERE ur.user_id = l.user_id AND ur.related_type = l.related_type AND ur.related_id = l.target)`
	if types := toOneTypes(param); len(types) > 0 {
		manyOnly = `l.related_type NOT IN (` + quoteList(types) + `) AND ` + manyOnly
	}
	return strings.Join(cond, "\n\t\tOR "), strings.Join(append(toOneDiff, "("+manyOnly+")"), " OR ")
}

// toOneTypes returns the dimension types users relate to with a to-one
// relationship (role, profile).
func toOneTypes(dims map[string]int) []string {
	var out []string
	for _, r := range schema.User().ToOne() {
		if _, ok := dims[r.RelatedType]; ok {
			out = append(out, r.RelatedType)
		}
	}
	return out
}

func quoteList(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(out, ", ")
}
