package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// accountOf is the name of e's account: accounts.Default when none was
// given.
func accountOf(e *env) string {
	if e.account == "" {
		return accounts.Default
	}
	return e.account
}

// snapshotOwner is who e's account's snapshots are written by: the fleet
// (its River schema) and the account; the database is filled at the first
// write (databaseIdentity).
func snapshotOwner(e *env) snapshot.Owner {
	return snapshot.Owner{Fleet: e.riverSchema(), Account: accountOf(e)}
}

// databaseIdentity reads the identity of pool's database when asked.
func databaseIdentity(e *env, pool *pgxpool.Pool) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		reg, err := accounts.New(pool, e.riverSchema())
		if err != nil {
			return "", err
		}
		return reg.DatabaseIdentity(ctx)
	}
}
