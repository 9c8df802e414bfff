package users

import (
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// userSQL holds the statements of a users page besides its table's (see
// sql/users.sql), rendered for one schema.
type userSQL struct {
	beginPage          string // a page's transaction, its lock waits bounded
	loadState          string // whether users is empty and the team_id index missing
	archiveVersions    string // superseded versions of the staged users, into user_version_history
	copyTeams          string // binary COPY of (user_id, team_id) into user_teams
	deleteTeams        string
	reopenTeams        string // $1 ids: memberships that users coming back had when marked deleted
	insertTeams        string
	noneUnresolved     string
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

func newUserSQL(schemaName string, users pgrow.Table, lockTimeout string) (userSQL, error) {
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
	var dimTables, dimHistories []string
	for _, r := range schema.Dimensions() {
		dimTables = append(dimTables, schema.QuoteIdentifier(schemaName)+"."+schema.QuoteIdentifier(r.Table))
		dimHistories = append(dimHistories, schema.QuoteIdentifier(schemaName)+"."+schema.QuoteIdentifier(r.Type+"_history"))
	}
	st, err := sqlfile.Load(sqlFiles, "users", map[string]string{
		"schema": schema.QuoteIdentifier(schemaName), "lock_timeout": lockTimeout, "users_stage": users.Stage,
		"version_columns": strings.Join(versionCols, ", "), "u.version_columns": pgrow.PrefixAll("u.", versionCols),
		"dimension_tables": strings.Join(dimTables, ", "), "dimension_histories": strings.Join(dimHistories, ", "),
	})
	if err != nil {
		return userSQL{}, err
	}
	var q userSQL
	err = sqlfile.Assign("users", st, map[string]*string{
		"beginPage": &q.beginPage, "loadState": &q.loadState, "archiveVersions": &q.archiveVersions,

		"copyTeams": &q.copyTeams, "deleteTeams": &q.deleteTeams, "insertTeams": &q.insertTeams,
		"reopenTeams":    &q.reopenTeams,
		"noneUnresolved": &q.noneUnresolved, "resolveQuarantine": &q.resolveQuarantine, "insertQuarantine": &q.insertQuarantine, "checkpoint": &q.checkpoint,
		"lockTeams": &q.lockTeams, "teamIndexDroppable": &q.teamIndexDroppable, "dropTeamIndex": &q.dropTeamIndex,
		"teamIndexMissing": &q.teamIndexMissing, "createTeamIndex": &q.createTeamIndex, "analyze": &q.analyze,
		"analyzeDue": &q.analyzeDue,
	})
	return q, err
}
