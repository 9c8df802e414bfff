package warehouse

import (
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/internal/pgcopy"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
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
	current     string // users only: (id, content_hash, linkage_hash, deleted, other_relationships, updated_at) of a set of ids
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
	t.copyTable, t.copyStage = pgcopy.Statement(t.table, t.columns), pgcopy.Statement(t.stage, t.columns)
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
		// A dimension row is written only when it changed or came back:
		// either way a new version starts (the old one is archived first:
		// see sql/history.sql).
		set = append(set, "version_valid_from = now()")
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
		t.current = fmt.Sprintf(`SELECT id, content_hash, linkage_hash, deleted_at IS NOT NULL, other_relationships::text, updated_at FROM %s WHERE id = ANY($1::bigint[])`, t.table)
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

// userSQL holds the statements of a users page besides its table's (see
// sql/users.sql), rendered for one schema.
type userSQL struct {
	beginPage          string // a page's transaction, its lock waits bounded
	usersEmpty         string
	allNewSavepoint    string
	allNewRollback     string
	archiveVersions    string // superseded versions of the staged users, into user_version_history
	copyTeams          string // binary COPY of (user_id, team_id) into user_teams
	deleteTeams        string
	reopenTeams        string // $1 ids: memberships that users coming back had when marked deleted
	insertTeams        string
	resolveQuarantine  string
	insertQuarantine   string
	checkpoint         string
	lockTeams          string
	teamIndexDroppable string
	dropTeamIndex      string
	teamIndexMissing   string
	createTeamIndex    string
	analyzeDue         string // $1 users written: whether the run's ANALYZE is due
	analyze            string
}

func newUserSQL(schemaName string, users tableSQL, lockTimeout string) (userSQL, error) {
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
	st, err := sqlfile.Load(sqlFiles, "users", map[string]string{
		"schema": schema.QuoteIdentifier(schemaName), "lock_timeout": lockTimeout, "users_stage": users.stage,
		"version_columns": strings.Join(versionCols, ", "), "u.version_columns": prefixAll("u.", versionCols),
	})
	if err != nil {
		return userSQL{}, err
	}
	var q userSQL
	err = sqlfile.Assign("users", st, map[string]*string{
		"beginPage": &q.beginPage, "usersEmpty": &q.usersEmpty, "archiveVersions": &q.archiveVersions,
		"allNewSavepoint": &q.allNewSavepoint, "allNewRollback": &q.allNewRollback,
		"copyTeams": &q.copyTeams, "deleteTeams": &q.deleteTeams, "insertTeams": &q.insertTeams,
		"reopenTeams":       &q.reopenTeams,
		"resolveQuarantine": &q.resolveQuarantine, "insertQuarantine": &q.insertQuarantine, "checkpoint": &q.checkpoint,
		"lockTeams": &q.lockTeams, "teamIndexDroppable": &q.teamIndexDroppable, "dropTeamIndex": &q.dropTeamIndex,
		"teamIndexMissing": &q.teamIndexMissing, "createTeamIndex": &q.createTeamIndex, "analyze": &q.analyze,
		"analyzeDue": &q.analyzeDue,
	})
	return q, err
}

// runSQL holds the run bookkeeping, status and membership statements (see
// sql/runs.sql), rendered for one schema.
type runSQL struct {
	startRun, unfinishedRuns, abandonRuns, finishRun, advanceWatermark, endRun string
	failedRunToResume, watermark, reopenRun, runOfJob, touchRun                string
	status, credentialsRefused, lastRuns, lastSyncListedMembership             string
	liveTeamIDs, deletedDimensionIDs, restoredDimensionIDs, replaceTeamMembers string
}

func newRunSQL(schemaName string) (runSQL, error) {
	st, err := sqlfile.Load(sqlFiles, "runs", map[string]string{"schema": schema.QuoteIdentifier(schemaName), "run_columns": runColumns})
	if err != nil {
		return runSQL{}, err
	}
	var q runSQL
	err = sqlfile.Assign("runs", st, map[string]*string{
		"startRun": &q.startRun, "unfinishedRuns": &q.unfinishedRuns, "abandonRuns": &q.abandonRuns,
		"finishRun": &q.finishRun, "advanceWatermark": &q.advanceWatermark, "endRun": &q.endRun,
		"failedRunToResume": &q.failedRunToResume, "watermark": &q.watermark, "reopenRun": &q.reopenRun,
		"runOfJob": &q.runOfJob, "touchRun": &q.touchRun, "status": &q.status, "credentialsRefused": &q.credentialsRefused, "lastRuns": &q.lastRuns,
		"lastSyncListedMembership": &q.lastSyncListedMembership, "liveTeamIDs": &q.liveTeamIDs,
		"deletedDimensionIDs": &q.deletedDimensionIDs, "restoredDimensionIDs": &q.restoredDimensionIDs, "replaceTeamMembers": &q.replaceTeamMembers,
	})
	return q, err
}
