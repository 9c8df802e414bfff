package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

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
				id, err := parseUserID(v)
				ids = append(ids, id)
				return err
			})
			file := fs.String("file", "", "a file of user ids to erase, one a line (# starts a comment)")
			asJSON := fs.Bool("json", false, "print what was erased as JSON")
			return func(ctx context.Context, e *env, _ []string) error {
				if *file != "" {
					more, err := readUserIDs(*file)
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
				printErasures(e.stdout, erased)
				return nil
			}
		},
	}
}

func parseUserID(v string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("a user id is a positive whole number, not %q", v)
	}
	return id, nil
}

func readUserIDs(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	defer f.Close()
	var ids []int64
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		id, err := parseUserID(line)
		if err != nil {
			return nil, fmt.Errorf("--file %s, line %d: %w", path, n, err)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	return ids, nil
}

func printErasures(w io.Writer, erased []pii.Erasure) {
	for _, x := range erased {
		if !x.Found {
			fmt.Fprintf(w, "user %d: not in the warehouse; nothing to erase (recorded in erasures)\n", x.UserID)
			continue
		}
		fmt.Fprintf(w, "user %d: erased: %d superseded versions and %d quarantine records deleted, %d personal values cleared in the current row\n",
			x.UserID, x.VersionsDeleted, x.QuarantineDeleted, x.ColumnsCleared)
	}
	fmt.Fprintln(w, "Parquet snapshots written before now keep their copies until retention removes them (docs/operations.md, Personal data).")
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
				return piiApply(ctx, e, store, *batch)
			}
		},
	}
}

func piiApply(ctx context.Context, e *env, store *warehouse.Store, batch int) error {
	pd, err := pii.New(store, e.cfg.PII)
	if err != nil {
		return err
	}
	fp := e.cfg.PII.Fingerprint()
	fmt.Fprintf(e.stdout, "applying personal-data policy %s\n", fp)
	pr, err := pd.Apply(ctx, batch, func(p pii.ApplyProgress) {
		if p.Resumed {
			fmt.Fprintf(e.stdout, "  (resumed a stopped apply) ")
		}
		fmt.Fprintf(e.stdout, "  %s: up to id %d, %d rows rewritten in all\n", p.Phase, p.LastID, p.Rewritten)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "done: %d rows rewritten; users, history and quarantine follow the policy\n", pr.Rewritten)
	if pr.KeptOtherKey > 0 {
		fmt.Fprintf(e.stdout, "%d values were hashed under another key and are left as they were (a hash cannot be re-keyed); a sync rewrites a user's row when it changes\n", pr.KeptOtherKey)
	}
	return listOlderSnapshots(ctx, e, fp)
}

// listOlderSnapshots prints the snapshots written under another policy.
func listOlderSnapshots(ctx context.Context, e *env, fp string) error {
	if e.cfg.SnapshotDir == "off" {
		return nil
	}
	dest, err := snapshot.ParseDestination(e.cfg.SnapshotDir, snapshot.S3Options{Endpoint: e.cfg.S3Endpoint, Region: e.cfg.S3Region,
		AccessKeyID: e.cfg.S3AccessKeyID, SecretAccessKey: e.cfg.S3SecretAccessKey, PathStyle: e.cfg.S3PathStyle})
	if err != nil {
		return usageError{fmt.Errorf("USERSYNC_SNAPSHOT_DIR: %w", err)}
	}
	ids, err := snapshot.Manifests(ctx, dest, e.cfg.Schema)
	if err != nil {
		return fmt.Errorf("listing snapshots: %w", err)
	}
	older := 0
	for _, id := range ids {
		m, err := snapshot.ReadManifest(ctx, dest, e.cfg.Schema, id)
		if err != nil {
			return err
		}
		if m.Policy == fp {
			continue
		}
		policy := m.Policy
		if policy == "" {
			policy = "not recorded (written before usersync recorded policies)"
		}
		fmt.Fprintf(e.stdout, "snapshot %s was written under an older policy: %s\n", id, policy)
		older++
	}
	if older > 0 {
		fmt.Fprintf(e.stdout, "%d snapshots hold values the current policy would not keep; retention ages them out, or see docs/operations.md (Personal data) to remove them sooner\n", older)
	}
	return nil
}

// commentPolicyColumns says in the column comments which columns the
// policy hashes or drops: Migrate has just written the catalog's comments.
func commentPolicyColumns(ctx context.Context, e *env, pool *pgxpool.Pool) error {
	store, err := warehouse.NewStore(pool, e.cfg.Schema)
	if err != nil {
		return err
	}
	pd, err := pii.New(store, e.cfg.PII)
	if err != nil {
		return err
	}
	return pd.CommentColumns(ctx)
}
