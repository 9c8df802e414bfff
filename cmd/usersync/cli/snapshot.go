package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/snapshot"
)

func snapshotCommand() command {
	return command{
		name:    "snapshot",
		summary: "write a Parquet snapshot of the warehouse (every table from one consistent read)",
		details: `Reads every analysts' table in one REPEATABLE READ, READ ONLY transaction and
writes <dir>/<schema>/<table>/<UTC timestamp>/part-NNNNN.parquet, then the
manifest <dir>/<schema>/_manifests/<timestamp>.json last (<schema> is
USERSYNC_SCHEMA: deployments sharing <dir> never see or remove each other's
snapshots): a snapshot without a manifest is incomplete and readers ignore it.
Files are written under temporary names and renamed (or, on S3, uploaded in
parts and published by the manifest); leftovers of a failed snapshot are removed
by the next one; USERSYNC_SNAPSHOT_KEEP complete snapshots are kept. A symbolic
link under <dir> (<dir> itself may be one) is refused, never followed or removed.

It writes nothing, and exits 1 saying why, until a sync has walked every user,
and while a run is under way or the last one to end did not succeed: the tables
would be from different moments (some of a run's commits in, the rest not). A
snapshot dated ahead of the clock (written while it was wrong, or copied in) is
set aside with a warning, not taken for the newest, and left to remove by hand.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			out := fs.String("out", "", "write to this folder or s3:// URL instead of USERSYNC_SNAPSHOT_DIR")
			asJSON := fs.Bool("json", false, "print the manifest as JSON")
			return func(ctx context.Context, e *env, _ []string) error {
				dir := e.cfg.SnapshotDir
				if *out != "" {
					if err := config.CheckSnapshotDir(*out); err != nil {
						return usageError{fmt.Errorf("--out %w", err)}
					}
					dir = *out
				}
				if dir == "off" || dir == "" {
					return usageError{errors.New("USERSYNC_SNAPSHOT_DIR is off: give --out DIR or set it")}
				}
				pool, _, err := openStore(ctx, e, 4)
				if err != nil {
					return err
				}
				defer pool.Close()
				if err := refusePaused(ctx, e, pool); err != nil {
					return err
				}
				w, err := newSnapshotWriter(e, pool, dir)
				if err != nil {
					return err
				}
				m, err := w.Write(ctx)
				if err != nil {
					return fmt.Errorf("writing the snapshot: %w", err)
				}
				if *asJSON {
					return writeJSON(e.stdout, m)
				}
				printManifest(e.stdout, dir, m)
				return nil
			}
		},
	}
}

// writeSnapshotJob writes the snapshot of a snapshot job, unless nothing
// changed since the newest one or the warehouse is not as a completed sync
// left it: both are skips, logged with their reason and kept in the job's
// outcome, and the job completes (no failure, no retry).
func writeSnapshotJob(ctx context.Context, e *env, sw *snapshot.Writer) (jobs.SnapshotOutcome, error) {
	m, err := sw.WriteChanged(ctx)
	var notReady *snapshot.NotReadyError
	switch {
	case errors.Is(err, snapshot.ErrUnchanged):
		e.logger.InfoContext(ctx, "snapshot skipped: nothing changed since the last complete one", "snapshot", m.ID)
		return jobs.SnapshotOutcome{ID: m.ID, Skipped: true, Reason: "nothing changed since snapshot " + m.ID, Bytes: manifestBytes(m)}, nil
	case errors.As(err, &notReady):
		e.logger.InfoContext(ctx, "snapshot skipped: "+notReady.Reason)
		return jobs.SnapshotOutcome{Skipped: true, Reason: notReady.Reason, NotReady: true, WaitsForWalk: notReady.NoCompleteWalk}, nil
	}
	return jobs.SnapshotOutcome{ID: m.ID, Bytes: manifestBytes(m)}, err
}

// manifestBytes is the size of a snapshot's Parquet files.
func manifestBytes(m snapshot.Manifest) int64 {
	var n int64
	for _, t := range m.Tables {
		n += t.Bytes
	}
	return n
}

// newSnapshotWriter builds the snapshot writer for dir from the settings.
func newSnapshotWriter(e *env, pool *pgxpool.Pool, dir string) (*snapshot.Writer, error) {
	dest, err := snapshot.ParseDestination(dir, snapshot.S3Options{Endpoint: e.cfg.S3Endpoint, Region: e.cfg.S3Region,
		AccessKeyID: e.cfg.S3AccessKeyID, SecretAccessKey: e.cfg.S3SecretAccessKey, PathStyle: e.cfg.S3PathStyle})
	if err != nil {
		return nil, usageError{fmt.Errorf("USERSYNC_SNAPSHOT_DIR: %w", err)}
	}
	w, err := snapshot.New(pool, e.cfg.Schema, dest, e.logger, time.Now, snapshot.Options{
		Compression: snapshot.Compression(e.cfg.SnapshotCompression), Keep: e.cfg.SnapshotKeep, KeepDaily: e.cfg.SnapshotKeepFor,
		BatchRows: e.cfg.SnapshotBatchRows, RowGroupRows: e.cfg.SnapshotRowGroupRows, Readers: e.cfg.SnapshotReaders,
		Policy: e.cfg.PII.Fingerprint(), Owner: snapshotOwner(e), Database: databaseIdentity(e, pool)})
	if err != nil {
		return nil, usageError{fmt.Errorf("configuring snapshots: %w", err)}
	}
	return w, nil
}

func printManifest(w io.Writer, dir string, m snapshot.Manifest) {
	fmt.Fprintf(w, "snapshot %s written to %s in %s (%s)\n", m.ID, dir, m.FinishedAt.Sub(m.StartedAt).Round(time.Millisecond), m.Compression)
	for _, t := range m.Tables {
		var bytes int64
		for _, f := range t.Files {
			bytes += f.Bytes
		}
		fmt.Fprintf(w, "  %-20s %9d rows  %3d file(s)  %8.1f MiB\n", t.Name, t.Rows, len(t.Files), float64(bytes)/(1<<20))
	}
	folder := strings.TrimRight(dir, "/") + "/" + m.Schema // the deployment's
	fmt.Fprintf(w, "  manifest             %s/_manifests/%s.json\n", folder, m.ID)
	if !strings.HasPrefix(dir, "s3://") {
		fmt.Fprintf(w, "\nRead it with DuckDB, e.g.:\n  SELECT role_name, count(*) FROM read_parquet('%s/users_current/%s/*.parquet') GROUP BY 1 ORDER BY 2 DESC;\n"+
			"or the newest complete snapshot, whichever it is, at each table's stable path:\n  SELECT count(*) FROM read_parquet('%s/users_current/current/*.parquet');\n",
			folder, m.ID, folder)
	}
}
