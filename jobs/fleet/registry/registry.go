// Package registry registers the fleet's accounts: it adds, changes,
// removes, rekeys and migrates them over the registry table (package
// sync/warehouse/accounts), with the checks and markers that keep each
// account's schema and snapshot folder its own, and resolves a registered
// account's Config from its row. The command line parses its flags into
// these calls and prints what they return.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
	"github.com/usersync/usersync/sync/warehouse/pii"
)

// InputError is an error the caller is to fix (a name, a setting, a
// refusal before anything changed), not a failure: usersync exits 2 on it.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }
func (e InputError) Unwrap() error { return e.Err }

// Fleet is the registry of a fleet's accounts, with what registering one
// needs: the fleet's settings (the default account's), its database, and
// the process environment, where an account's PII key may be.
type Fleet struct {
	Config config.Config
	Pool   *pgxpool.Pool
	Reg    *accounts.Registry
	Getenv func(string) string
	Logger *slog.Logger
}

// New is the registry of the fleet whose settings are cfg, over pool.
func New(pool *pgxpool.Pool, cfg config.Config, getenv func(string) string, logger *slog.Logger) (*Fleet, error) {
	reg, err := accounts.New(pool, jobs.RiverSchema(cfg.Schema))
	if err != nil {
		return nil, err
	}
	return &Fleet{Config: cfg, Pool: pool, Reg: reg, Getenv: getenv, Logger: logger}, nil
}

// riverSchema is the fleet's job queue and registry schema.
func (f *Fleet) riverSchema() string { return jobs.RiverSchema(f.Config.Schema) }

// NotFound turns an unknown account into an InputError.
func NotFound(name string, err error) error {
	if errors.Is(err, accounts.ErrNotFound) {
		return InputError{fmt.Errorf("no account %s (usersync accounts list shows them)", name)}
	}
	return err
}

// Union is the fleet's union views: the default account and every
// registered one of reg, read from the registry when they are made.
func Union(fleet config.Config, reg *accounts.Registry) accounts.Union {
	return accounts.Union{Schema: accounts.UnionSchema(fleet.Schema), ReaderRole: fleet.ReaderRole,
		Members: func(ctx context.Context) ([]accounts.Member, error) {
			heads, err := reg.Heads(ctx)
			if err != nil {
				return nil, err
			}
			members := []accounts.Member{{Name: accounts.Default, Schema: fleet.Schema}}
			for _, h := range heads {
				members = append(members, accounts.Member{Name: h.Name, Schema: h.Schema})
			}
			return members, nil
		}}
}

// Views remakes the union views unless they are the accounts' already, and
// says in which schema and whether it did.
func (f *Fleet) Views(ctx context.Context) (string, bool, error) {
	u := Union(f.Config, f.Reg)
	changed, err := u.Refresh(ctx, f.Pool)
	return u.Schema, changed, err
}

// refreshUnion remakes the union views after an account came or went,
// unless they are the accounts' already. A server older than PostgreSQL 15
// gets none, with a warning.
func (f *Fleet) refreshUnion(ctx context.Context) error {
	_, err := Union(f.Config, f.Reg).Refresh(ctx, f.Pool)
	if errors.Is(err, accounts.ErrUnionNeedsPG15) {
		f.Logger.WarnContext(ctx, err.Error())
		return nil
	}
	return err
}

// snapshotRoot is the fleet's snapshot destination; nil when snapshots are
// off.
func (f *Fleet) snapshotRoot() (snapshot.Destination, error) {
	c := f.Config
	if c.SnapshotDir == "off" || c.SnapshotDir == "" {
		return nil, nil
	}
	dest, err := snapshot.ParseDestination(c.SnapshotDir, snapshot.S3Options{Endpoint: c.S3Endpoint, Region: c.S3Region,
		AccessKeyID: c.S3AccessKeyID, SecretAccessKey: c.S3SecretAccessKey, PathStyle: c.S3PathStyle})
	if err != nil {
		return nil, InputError{fmt.Errorf("USERSYNC_SNAPSHOT_DIR: %w", err)}
	}
	return dest, nil
}

// folderOwner is the snapshot Owner of account name of reg's fleet.
func folderOwner(ctx context.Context, reg *accounts.Registry, name string) (snapshot.Owner, error) {
	db, err := reg.DatabaseIdentity(ctx)
	return snapshot.Owner{Fleet: reg.Fleet(), Database: db, Account: name}, err
}

// CommentPolicyColumns says in the column comments of cfg's schema which
// columns its policy hashes or drops: Migrate has just written the
// catalog's comments.
func CommentPolicyColumns(ctx context.Context, pool *pgxpool.Pool, cfg config.Config) error {
	store, err := warehouse.NewStore(pool, cfg.Schema)
	if err != nil {
		return err
	}
	pd, err := pii.New(store, cfg.PII)
	if err != nil {
		return err
	}
	return pd.CommentColumns(ctx)
}
