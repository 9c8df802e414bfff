// Package warehouse is the core of the warehouse: the migrations
// (migrate.go, which work before a Store exists), the sync lock (lock.go),
// the run bookkeeping with its checkpoint (Runs, runs.go; the Counts,
// Progress and Checkpoint every run shares, counts.go) and the status
// queries (status.go). Every statement is schema-qualified with the
// configured schema; values are always parameters.
//
// The protocols that write the warehouse have packages of their own, each
// taking a Store for its pool and schema: users (the users load),
// dimensions (teams, roles, profiles, history, membership), reconcile,
// pii (personal data) and tokens (the OAuth credential). What they
// share of a row's storage is internal/pgrow; the binary COPY encoder is
// internal/pgcopy.
//
// Where the SQL lives: the statements of this package are in sql/runs.sql,
// rendered once per Store (statements.go), and in
// testdata/statements.golden.sql, rendered for schema usersync, which
// TestStatementsGolden keeps true. Still inline: the migration runner and
// the advisory locks (constant statements).
package warehouse
