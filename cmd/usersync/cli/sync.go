package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// ExitQuarantined is the exit code of a run that completed but quarantined
// resources while --strict was given.
const ExitQuarantined = 3

type quarantinedError struct{ n int64 }

func (e quarantinedError) Error() string {
	return fmt.Sprintf("%d resources could not be typed and were quarantined (--strict); see the quarantine table", e.n)
}

func syncCommand() command {
	return command{
		name:    "sync",
		summary: "sync users, teams, roles and profiles into the warehouse now",
		details: `Without flags: an incremental sync of the users updated since the watermark minus
USERSYNC_LOOKBACK, after listing teams, roles and profiles in full. --full syncs
every user; --since/--until sync a closed updatedAt range (a backfill) without
moving the watermark backwards. A run that died is resumed from its checkpoint.
Only one sync runs against a schema at a time: a second one waits up to 5
seconds, then exits (exit 1) unless --wait-lock is given. Times are RFC 3339 or YYYY-MM-DD (UTC).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			full := fs.Bool("full", false, "sync every user, not only those updated since the watermark")
			since := fs.String("since", "", "backfill users updated at or after this time")
			until := fs.String("until", "", "backfill users updated at or before this time")
			strict := fs.Bool("strict", false, "exit 3 if any resource was quarantined")
			waitLock := fs.Bool("wait-lock", false, "wait for a running sync to finish instead of exiting")
			asJSON := fs.Bool("json", false, "print the summary as JSON")
			return func(ctx context.Context, e *env, _ []string) error {
				// A few seconds of grace: a killed process's lock lingers until
				// the server notices its connection is gone.
				req := syncer.Request{Kind: warehouse.KindIncremental, WaitLock: *waitLock, LockTimeout: 5 * time.Second}
				var err error
				if req.Since, err = parseTimeFlag("--since", *since); err != nil {
					return err
				}
				if req.Until, err = parseTimeFlag("--until", *until); err != nil {
					return err
				}
				switch {
				case *full && (req.Since != nil || req.Until != nil):
					return usageError{errors.New("--full syncs everything; it cannot be combined with --since or --until")}
				case *full:
					req.Kind = warehouse.KindFull
				case req.Since != nil || req.Until != nil:
					req.Kind = warehouse.KindBackfill
				}
				sum, err := runSync(ctx, e, req, !*asJSON)
				if err != nil {
					return err
				}
				if *asJSON {
					if err := writeJSON(e.stdout, sum); err != nil {
						return fmt.Errorf("printing the summary: %w", err)
					}
				} else {
					printSummary(e.stdout, sum)
				}
				if *strict && sum.Quarantined > 0 {
					return quarantinedError{sum.Quarantined}
				}
				return nil
			}
		},
	}
}

func parseTimeFlag(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, usageError{fmt.Errorf("%s must be an RFC 3339 time or a YYYY-MM-DD date, not %q", name, v)}
}

// runSync opens the database and the API client and runs one sync. With
// live set and stderr a terminal, it shows a progress line.
func runSync(ctx context.Context, e *env, req syncer.Request, live bool) (syncer.Summary, error) {
	pool, store, err := openStore(ctx, e, 8)
	if err != nil {
		return syncer.Summary{}, err
	}
	defer pool.Close()
	if err := refusePaused(ctx, e, pool); err != nil {
		return syncer.Summary{}, err
	}
	client, err := newAPIClient(ctx, e, store)
	if err != nil {
		return syncer.Summary{}, err
	}
	cfg := syncerConfig(e.cfg, e.logger)
	if live && isTerminal(e.stderr) {
		cfg.Progress = func(p syncer.Progress) {
			rate := float64(p.Rows) / max(p.Elapsed.Seconds(), 0.001)
			fmt.Fprintf(e.stderr, "\r%s run %d: %d pages, %d users, %.0f users/s   ", p.Kind, p.RunID, p.Pages, p.Rows, rate)
		}
		defer fmt.Fprint(e.stderr, "\r\033[K")
	}
	s, err := syncer.New(client, store, cfg)
	if err != nil {
		return syncer.Summary{}, err
	}
	sum, err := s.Run(ctx, req)
	if errors.Is(err, warehouse.ErrLocked) {
		return sum, fmt.Errorf("%w; run with --wait-lock to wait for it", err)
	}
	return sum, err
}

// refusePaused refuses the work of a paused account (sync, backfill,
// reconcile, snapshot) with one line saying since when it is paused and how
// to resume it: a pause stops all of the account's work, by hand as by its
// schedules, so that whoever paused it (its API being migrated, its token
// being replaced, its budget wanted elsewhere) can count on nothing
// reading its API or writing its schema until it is resumed. The default
// account is never paused.
func refusePaused(ctx context.Context, e *env, pool *pgxpool.Pool) error {
	if !e.registered() {
		return nil
	}
	reg, err := accounts.New(pool, e.riverSchema())
	if err != nil {
		return err
	}
	a, err := reg.Get(ctx, e.account)
	if err != nil {
		return fmt.Errorf("reading account %s: %w", e.account, err)
	}
	if a.PausedAt == nil {
		return nil
	}
	return usageError{fmt.Errorf("account %s is paused (since %s): none of its work runs, by hand or scheduled; usersync accounts resume %s resumes it",
		e.account, a.PausedAt.UTC().Format(time.RFC3339), e.account)}
}

// requireMigrated fails with a clear message when the schema is missing or
// older than this binary.
func requireMigrated(ctx context.Context, store *warehouse.Store) error {
	applied, latest, err := warehouse.MigrationStatus(ctx, store.Pool(), store.Schema())
	if err != nil {
		return err
	}
	if applied < latest {
		return fmt.Errorf("schema %s is at migration %d of %d: run usersync migrate first", store.Schema(), applied, latest)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func printSummary(w io.Writer, s syncer.Summary) {
	resumed := ""
	if s.Resumed {
		resumed = " (resumed)"
	}
	fmt.Fprintf(w, "%s run %d%s finished in %s\n", s.Kind, s.RunID, resumed, s.Duration.Round(time.Millisecond))
	if s.From != nil || s.Until != nil {
		fmt.Fprintf(w, "  range        updatedAt %s .. %s\n", timeOrInf(s.From), timeOrInf(s.Until))
	}
	fmt.Fprintf(w, "  users        %d pages, %d received: %d inserted, %d updated, %d unchanged, %d quarantined\n",
		s.Pages, s.Fetched, s.Inserted, s.Updated, s.Unchanged, s.Quarantined)
	fmt.Fprintf(w, "  history      %d new versions\n", s.Versions)
	names := make([]string, 0, len(s.Dimensions))
	for n := range s.Dimensions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := s.Dimensions[n]
		fmt.Fprintf(w, "  %-12s %d inserted, %d updated, %d unchanged, %d marked deleted, %d quarantined\n",
			n, c.Inserted, c.Updated, c.Unchanged, c.Deleted, c.Quarantined)
	}
	if m := s.Membership; m != nil {
		fmt.Fprintf(w, "  membership   %d teams listed: %d members, %d added, %d removed\n", m.Teams, m.Members, m.Added, m.Removed)
	}
	if len(s.Unknown) > 0 {
		var parts []string
		for k, v := range s.Unknown {
			parts = append(parts, fmt.Sprintf("%s (%d)", k, v))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "  drift        attributes not in the catalog, kept in raw: %s\n", strings.Join(parts, ", "))
	}
	if s.FutureUpdatedAt > 0 {
		fmt.Fprintf(w, "  future       %d users updated further ahead than the allowance; stored, the watermark ignores them\n", s.FutureUpdatedAt)
	}
	fmt.Fprintf(w, "  api          %d requests, %d rate-limited, %d retried\n", s.Requests, s.RateLimited, s.Retries)
	if s.Watermark != nil {
		fmt.Fprintf(w, "  watermark    %s\n", s.Watermark.UTC().Format(time.RFC3339Nano))
	}
}

func timeOrInf(t *time.Time) string {
	if t == nil {
		return "inf"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// syncerConfig is the syncer's configuration from the settings.
func syncerConfig(c config.Config, logger *slog.Logger) syncer.Config {
	return syncer.Config{
		PageSize: c.PageSize, Lookback: c.Lookback, MaxFutureSkew: c.MaxFutureSkew,
		NoDataConnections: !c.DataConnections, Logger: logger,
		Policy: c.PII, DeletedRetention: c.DeletedRetention, ReconcileResumeWithin: c.ReconcileResumeWithin,
	}
}
