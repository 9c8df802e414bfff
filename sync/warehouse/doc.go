// Package warehouse holds all of usersync's SQL: migrations, the page loader,
// the run bookkeeping, the OAuth token store and the status queries. Every
// statement is schema-qualified with the configured schema; values are always
// parameters. Functions take a DBTX, so they run on a pool, a connection or a
// transaction alike.
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
