// Package warehouse is the core of the warehouse: the migrations
// (migrate.go, which work before a Store exists), the sync lock (lock.go),
// the run bookkeeping with its checkpoint (Runs, runs.go; the Counts,
// Progress and Checkpoint every run shares, counts.go) and the status
// queries (status.go). Every statement is schema-qualified with the
// configured schema; values are parameters wherever PostgreSQL takes them
// (not in COMMENT ON or GRANT: migrate_sql.go quotes those).
//
// The protocols that write the warehouse have packages of their own, each
// taking a Store for its pool and schema: users (the users load),
// dimensions (teams, roles, profiles, history, membership), reconcile,
// pii (personal data) and tokens (the OAuth credential). What they
// share of a row's storage is pgrow; the binary COPY encoder is
// pgcopy.
//
// Where the SQL lives: the statements of this package are in sql/*.sql:
// runs.sql (run bookkeeping and status, rendered once per Store, sql.go),
// locks.sql (the advisory locks) and migrate.sql (the migration runner,
// rendered from the schema name, as migrate works before a Store exists;
// migrate_sql.go derives the comments and grants from the catalog with its
// templates). testdata/statements.golden.sql holds them all, rendered for
// schema usersync with the comments and grants they derive, and
// TestStatementsGolden keeps it true. The versioned migrations are
// schema/migrations/*.sql.
package warehouse
