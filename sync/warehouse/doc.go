// Package warehouse holds the warehouse's SQL but the OAuth credential's
// (sync/warehouse/tokens), the snapshot's reads (sync/snapshot) and River's
// (jobs): migrations, the users load, the dimension lists, the reconcile,
// the run bookkeeping and the status queries. Every statement is
// schema-qualified with the configured schema; values are always parameters.
//
// Where the SQL lives: the statements a Store runs are in sql/*.sql (the
// users write path and the team_id index in users.sql, the reconcile in
// reconcile.sql, the run bookkeeping, status and membership in runs.sql),
// rendered once per Store by statements.go; those whose column lists come
// from the catalog (each resource table's COPY, upsert and reads, the
// dimension lists, the reconcile's link conditions) are rendered once per
// Store from it (sql.go, dimension_sql.go, reconcile.go). Every one of them
// is in testdata/statements.golden.sql, rendered for schema usersync, which
// TestStatementsGolden keeps true. Still inline: the migration runner
// (migrate.go, which works before a Store exists) and the advisory locks
// (constant statements). The OAuth credential has a package of its own,
// sync/warehouse/tokens, with its sql/tokens.sql and golden file; the
// warehouse is being split so by protocol (sync/warehouse/sqlfile reads
// each package's statements).
//
// The users write path reads top-down: UsersLoad (usersload.go) takes the
// pages of a walk and commits them in order with the checkpoint; each page
// is a userPage (userpage.go) that reads what the warehouse holds of its
// users, classifies them (classify.go, no database) and writes what
// differs; the COPY columns and their encoders are declared once
// (columns.go), the binary encoding in copy.go.
package warehouse

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DBTX is what the package needs from a pool, a connection or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
