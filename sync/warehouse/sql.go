package warehouse

import (
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
)

// tableSQL holds the statements of one resource table, built once from the
// catalog for a schema, so the hot path only binds parameters.
type tableSQL struct {
	res     schema.Resource
	table   string      // qualified table name
	stage   string      // per-connection temp staging table name (unqualified: pg_temp)
	cols    []rowColumn // what COPY writes, in order (see rowColumns)
	columns []string    // their names
	toOnes  int         // to-one id columns
	hashed  bool        // the table has content_hash (users)

	copyTable   string // binary COPY of columns into table
	copyStage   string // the same into stage
	createStage string
	upsert      string // returns (inserted, updated)
	current     string // users only: (id, content_hash, linkage_hash, deleted, other_relationships) of a set of ids
	currentFill string // (id, the stored value of each fill column) of a set of ids
	liveCount   string
}

func newTableSQL(schemaName string, res schema.Resource) tableSQL {
	s := schema.QuoteIdentifier(schemaName)
	t := tableSQL{res: res, table: s + "." + schema.QuoteIdentifier(res.Table), hashed: res.Type == "user",
		cols: rowColumns(res), toOnes: len(res.ToOne())}
	t.stage = schema.QuoteIdentifier("usersync_stage_" + schemaName + "_" + res.Table)
	fill := []string{"id"}
	for _, c := range t.cols {
		t.columns = append(t.columns, c.name)
		if c.fill != nil {
			fill = append(fill, c.read)
		}
	}
	t.copyTable, t.copyStage = copySQL(t.table, t.columns), copySQL(t.stage, t.columns)
	quoted := quoteAll(t.columns)
	t.createStage = fmt.Sprintf(`CREATE TEMP TABLE IF NOT EXISTS %s (LIKE %s INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`, t.stage, t.table)

	var set []string
	for _, c := range quoted[1:] {
		if c == `"version_run_id"` {
			continue // set below, with the other version columns
		}
		set = append(set, c+" = EXCLUDED."+c)
	}
	if t.hashed {
		// A row whose content changed starts a new version: a fresh id (the
		// column's default, evaluated for the proposed row), now, this run.
		for _, c := range []string{"version_id", "version_valid_from", "version_run_id"} {
			set = append(set, fmt.Sprintf("%[1]s = CASE WHEN t.content_hash <> EXCLUDED.content_hash THEN EXCLUDED.%[1]s ELSE t.%[1]s END", c))
		}
	}
	changed := "t.content_hash <> EXCLUDED.content_hash OR t.linkage_hash IS DISTINCT FROM EXCLUDED.linkage_hash"
	if !t.hashed {
		// A dimension row changed when any column did: attributes, to-one
		// ids or raw.
		changed = fmt.Sprintf("(%s) IS DISTINCT FROM (%s)", prefixAll("t.", quoted[1:]), prefixAll("EXCLUDED.", quoted[1:]))
	}
	t.upsert = fmt.Sprintf(`WITH up AS (
	INSERT INTO %[1]s AS t (%[2]s) SELECT %[2]s FROM %[3]s
	ON CONFLICT (id) DO UPDATE SET %[4]s, synced_at = now(), deleted_at = NULL
	WHERE %[5]s OR t.deleted_at IS NOT NULL
	RETURNING (xmax = 0) AS inserted)
SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM up`,
		t.table, strings.Join(quoted, ", "), t.stage, strings.Join(set, ", "), changed)
	if t.hashed {
		t.current = fmt.Sprintf(`SELECT id, content_hash, linkage_hash, deleted_at IS NOT NULL, other_relationships::text FROM %s WHERE id = ANY($1::bigint[])`, t.table)
	}
	if len(fill) > 1 {
		t.currentFill = fmt.Sprintf(`SELECT %s FROM %s WHERE id = ANY($1::bigint[])`, strings.Join(fill, ", "), t.table)
	}
	t.liveCount = fmt.Sprintf(`SELECT count(*) FROM %s WHERE deleted_at IS NULL`, t.table)
	return t
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = schema.QuoteIdentifier(n)
	}
	return out
}

func prefixAll(prefix string, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return strings.Join(out, ", ")
}

// userSQL holds the statements of a users page besides its table's.
type userSQL struct {
	beginPage         string // a page's transaction, its lock waits bounded
	usersEmpty        string
	archiveVersions   string // superseded versions of the staged users, into user_version_history
	copyTeams         string // binary COPY of (user_id, team_id) into user_teams
	deleteTeams       string
	insertTeams       string
	resolveQuarantine string
	insertQuarantine  string
	checkpoint        string
}

func newUserSQL(schemaName string, users tableSQL, lockTimeout string) userSQL {
	s := schema.QuoteIdentifier(schemaName)
	// A version's columns: the content, not the keys, hashes or linkage.
	u := schema.User()
	versionCols := []string{}
	for _, a := range u.Attributes {
		versionCols = append(versionCols, schema.QuoteIdentifier(a.Column()))
	}
	for _, rel := range u.ToOne() {
		versionCols = append(versionCols, schema.QuoteIdentifier(rel.Column()))
	}
	versionCols = append(versionCols, "raw", "data_connections")
	vc := strings.Join(versionCols, ", ")
	return userSQL{
		beginPage:  "BEGIN; SET LOCAL lock_timeout = '" + lockTimeout + "'",
		usersEmpty: fmt.Sprintf(`SELECT NOT EXISTS (SELECT FROM %s.users)`, s),
		copyTeams:  copySQL(s+".user_teams", []string{"user_id", "team_id"}),
		insertQuarantine: fmt.Sprintf(`INSERT INTO %s.quarantine (run_id, resource_type, resource_id, field, error, raw)
VALUES ($1, $2, $3, $4, $5, $6)`, s),
		// Before the upsert replaces a user's content, its current version
		// (held in the users row) is closed into the history.
		archiveVersions: fmt.Sprintf(`INSERT INTO %[1]s.user_version_history (version_id, user_id, content_hash, %[3]s, valid_from, valid_to, run_id)
OVERRIDING SYSTEM VALUE
SELECT u.version_id, u.id, u.content_hash, %[4]s, u.version_valid_from, now(), u.version_run_id
FROM %[2]s u JOIN %[5]s st ON st.id = u.id WHERE u.content_hash <> st.content_hash`,
			s, users.table, vc, prefixAll("u.", versionCols), users.stage),
		// The diff deletes use NOT IN over a subquery, which PostgreSQL runs as a
		// hashed subplan; a correlated NOT EXISTS over unnest() was planned as a
		// nested loop and grew with the square of the page.
		deleteTeams: fmt.Sprintf(`DELETE FROM %[1]s.user_teams ut WHERE ut.user_id = ANY($1::bigint[])
AND (ut.user_id, ut.team_id) NOT IN (SELECT u, t FROM unnest($2::bigint[], $3::bigint[]) AS n(u, t))`, s),
		insertTeams: fmt.Sprintf(`INSERT INTO %[1]s.user_teams (user_id, team_id)
SELECT u, t FROM unnest($1::bigint[], $2::bigint[]) AS n(u, t) ON CONFLICT DO NOTHING`, s),
		resolveQuarantine: fmt.Sprintf(`UPDATE %[1]s.quarantine SET resolved_at = now()
WHERE resolved_at IS NULL AND resource_type = $1 AND resource_id = ANY($2::text[])`, s),
		checkpoint: fmt.Sprintf(`UPDATE %[1]s.sync_runs SET next_url = $2, max_updated_at = $3, pages = $4, fetched = $5,
inserted = $6, updated = $7, unchanged = $8, quarantined = $9, requests = $10, rate_limited = $11, retries = $12,
unknown_attributes = $13, heartbeat_at = now() WHERE run_id = $1`, s),
	}
}
