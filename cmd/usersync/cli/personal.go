package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pii"
)

func forgetCommand() command {
	return command{
		name:    "forget",
		summary: "erase people from the warehouse: their history, quarantine records and personal columns",
		args:    "--user ID [--user ID ...] | --file F",
		details: `In one transaction, for each user id: deletes the user's superseded versions
(user_version_history) and quarantine records, and clears the personal columns of the
current row (the catalog's personal attributes, and those USERSYNC_PII_HASH and
USERSYNC_PII_DROP name), the attributes kept in raw and the data connections. Each
erasure is recorded in the erasures table (user id, time, database role, counts; no
personal data). A user the warehouse does not hold is reported and recorded, not an
error. Parquet snapshots written before keep their copies until retention removes
them: see docs/operations.md (Personal data).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var ids []int64
			fs.Func("user", "id of a user to erase (repeatable)", func(v string) error {
				id, err := pii.ParseUserID(v)
				ids = append(ids, id)
				return err
			})
			file := fs.String("file", "", "a file of user ids to erase, one a line (# starts a comment)")
			asJSON := fs.Bool("json", false, "print what was erased as JSON")
			return func(ctx context.Context, e *env, _ []string) error {
				if *file != "" {
					more, err := pii.ReadUserIDs(*file)
					if err != nil {
						return usageError{err}
					}
					ids = append(ids, more...)
				}
				if len(ids) == 0 {
					return usageError{errors.New("give the users to erase with --user ID or --file F")}
				}
				pool, store, err := openStore(ctx, e, 2)
				if err != nil {
					return err
				}
				defer pool.Close()
				pd, err := pii.New(store, e.cfg.PII)
				if err != nil {
					return err
				}
				erased, err := pd.Forget(ctx, ids)
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, struct {
						Erasures []pii.Erasure `json:"erasures"`
					}{erased})
				}
				pii.WriteErasures(e.stdout, erased)
				return nil
			}
		},
	}
}

func piiApplyCommand() command {
	return command{
		name:    "pii apply",
		summary: "rewrite the stored users, history and quarantine to the current personal-data policy",
		details: `Hashes the values USERSYNC_PII_HASH names and clears those USERSYNC_PII_DROP names
(and raw, with USERSYNC_PII_DROP_UNKNOWN=true) in users, user_version_history and the
users' quarantine records, in batches of --batch ids, one transaction a batch, printing
a line per batch. Its progress is kept in the pii_apply table: an apply that was
stopped (even by kill -9) goes on from its last batch when run again. Each row records
the policy it was written under (pii_policy_id): a value that policy hashed is left
alone, so running it twice changes nothing more, and one it hashed under another key
cannot be re-keyed and is counted. It then lists the snapshots written under another
policy, which still hold the older values.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			batch := fs.Int("batch", 5000, "ids rewritten per transaction")
			waitLock := fs.Bool("wait-lock", false, "wait for a running sync to finish instead of exiting")
			return func(ctx context.Context, e *env, _ []string) error {
				if *batch < 1 || *batch > 100000 {
					return usageError{fmt.Errorf("--batch must be between 1 and 100000, not %d", *batch)}
				}
				pool, store, err := openStore(ctx, e, 2)
				if err != nil {
					return err
				}
				defer pool.Close()
				take := store.TryLock
				if *waitLock {
					take = store.Lock
				}
				lock, err := take(ctx)
				if errors.Is(err, warehouse.ErrLocked) {
					return fmt.Errorf("%w; run with --wait-lock to wait for it", err)
				}
				if err != nil {
					return err
				}
				defer lock.Release()
				pd, err := pii.New(store, e.cfg.PII)
				if err != nil {
					return err
				}
				if err := pd.ApplyReporting(ctx, *batch, e.stdout); err != nil || e.cfg.SnapshotDir == "off" {
					return err
				}
				dest, err := snapshot.ParseDestination(e.cfg.SnapshotDir, snapshot.S3Options{Endpoint: e.cfg.S3Endpoint, Region: e.cfg.S3Region,
					AccessKeyID: e.cfg.S3AccessKeyID, SecretAccessKey: e.cfg.S3SecretAccessKey, PathStyle: e.cfg.S3PathStyle})
				if err != nil {
					return usageError{fmt.Errorf("USERSYNC_SNAPSHOT_DIR: %w", err)}
				}
				return snapshot.WriteOlderPolicies(ctx, e.stdout, dest, e.cfg.Schema, e.cfg.PII.Fingerprint())
			}
		},
	}
}
