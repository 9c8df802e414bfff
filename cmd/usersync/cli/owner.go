package cli

import (
	"context"
	"fmt"

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

// folderOwner is the snapshot Owner of account name of reg's fleet.
func folderOwner(ctx context.Context, reg *accounts.Registry, name string) (snapshot.Owner, error) {
	db, err := reg.DatabaseIdentity(ctx)
	return snapshot.Owner{Fleet: reg.Fleet(), Database: db, Account: name}, err
}

// snapshotRoot is the fleet's snapshot destination; nil when snapshots are
// off.
func snapshotRoot(e *env) (snapshot.Destination, error) {
	c := e.fleetConfig()
	if c.SnapshotDir == "off" || c.SnapshotDir == "" {
		return nil, nil
	}
	dest, err := snapshot.ParseDestination(c.SnapshotDir, snapshot.S3Options{Endpoint: c.S3Endpoint, Region: c.S3Region,
		AccessKeyID: c.S3AccessKeyID, SecretAccessKey: c.S3SecretAccessKey, PathStyle: c.S3PathStyle})
	if err != nil {
		return nil, usageError{fmt.Errorf("USERSYNC_SNAPSHOT_DIR: %w", err)}
	}
	return dest, nil
}
