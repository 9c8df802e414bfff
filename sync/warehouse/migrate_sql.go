package warehouse

import (
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// migrateSQL holds the migration runner's statements (sql/migrate.sql),
// rendered from the schema name alone: migrate works before a Store exists.
type migrateSQL struct {
	quoted                                                                                           string // the schema
	createSchema, createMigrations, recordMigration, appliedVersions, migrationsExist, latestApplied string
	commentBookkeeping, comment                                                                      string
	readerIsMigrator, readerRole, readerMissing, createReader, grantUsage, grantSelect, revokeAll    string
}

func newMigrateSQL(schemaName string) (migrateSQL, error) {
	later := sqlfile.Later // identifiers and COMMENT ON's literal: filled as each statement is sent
	st, err := sqlfile.Load(sqlFiles, "migrate", map[string]string{"schema": schema.QuoteIdentifier(schemaName),
		"role": later, "table": later, "kind": later, "target": later, "meaning": later})
	if err != nil {
		return migrateSQL{}, err
	}
	q := migrateSQL{quoted: schema.QuoteIdentifier(schemaName)}
	err = sqlfile.Assign("migrate", st, map[string]*string{
		"createSchema": &q.createSchema, "createMigrations": &q.createMigrations, "recordMigration": &q.recordMigration,
		"appliedVersions": &q.appliedVersions, "migrationsExist": &q.migrationsExist, "latestApplied": &q.latestApplied,
		"commentBookkeeping": &q.commentBookkeeping, "comment": &q.comment,
		"readerIsMigrator": &q.readerIsMigrator, "readerRole": &q.readerRole, "readerMissing": &q.readerMissing, "createReader": &q.createReader,
		"grantUsage": &q.grantUsage, "grantSelect": &q.grantSelect, "revokeAll": &q.revokeAll,
	})
	return q, err
}

// comments is the batch of every COMMENT ON of the schema: the bookkeeping's,
// then one per table, view and column of the catalog, with its meaning.
func (q migrateSQL) comments() string {
	stmts := []string{q.commentBookkeeping}
	comment := func(kind, target, meaning string) {
		stmts = append(stmts, sqlfile.Fill(q.comment, map[string]string{"kind": kind, "target": target, "meaning": schema.QuoteLiteral(meaning)}))
	}
	for _, t := range schema.Tables() {
		kind := "TABLE"
		if t.View {
			kind = "VIEW"
		}
		target := q.quoted + "." + schema.QuoteIdentifier(t.Name)
		comment(kind, target, t.Meaning)
		for _, c := range t.Columns {
			comment("COLUMN", target+"."+schema.QuoteIdentifier(c.Name), c.Meaning)
		}
	}
	return strings.Join(stmts, ";\n")
}

// grants is the batch that lets role (valid, unquoted) read the analysts'
// tables and nothing else.
func (q migrateSQL) grants(role string) string {
	r := schema.QuoteIdentifier(role)
	stmts := []string{sqlfile.Fill(q.grantUsage, map[string]string{"role": r})}
	on := func(stmt, table string) {
		stmts = append(stmts, sqlfile.Fill(stmt, map[string]string{"role": r, "table": schema.QuoteIdentifier(table)}))
	}
	for _, t := range schema.Tables() {
		if t.Analysts {
			on(q.grantSelect, t.Name)
		} else {
			on(q.revokeAll, t.Name)
		}
	}
	on(q.revokeAll, "schema_migrations")
	return strings.Join(stmts, ";\n")
}

// lockSQL holds the advisory locks' statements (sql/locks.sql).
type lockSQL struct {
	tryLock, unlock, lockWait string
}

func newLockSQL() (lockSQL, error) {
	st, err := sqlfile.Load(sqlFiles, "locks", nil)
	if err != nil {
		return lockSQL{}, err
	}
	var q lockSQL
	err = sqlfile.Assign("locks", st, map[string]*string{"tryLock": &q.tryLock, "unlock": &q.unlock, "lockWait": &q.lockWait})
	return q, err
}
