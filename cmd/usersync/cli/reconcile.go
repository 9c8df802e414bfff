package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func reconcileCommand() command {
	return command{
		name:    "reconcile",
		summary: "check every user id against the warehouse: fetch what is missing or stale, mark what disappeared",
		details: `Lists every user id with its updatedAt and its team, role and profile linkage (sparse
fields, about one request per 1,000 users), compares them with the warehouse, fetches
missing and stale users, and users linked otherwise than the API links them, by id and
loads them like a sync (history, linkage, quarantine), marks ids the API no longer
returns deleted (and clears ids that came back), lists teams, roles and profiles in
full, and, when the API sends users' teams without data (or
USERSYNC_RECONCILE_MEMBERSHIP=always), lists every team's members. It stops without marking anything when it
would mark more than USERSYNC_RECONCILE_MAX_DELETE of the live users deleted (an
empty or truncated listing is not a mass deletion). It never moves the watermark.
A reconcile cut short during its id walk (a restart, a lost database connection) is
resumed by the next one from the page after the last it recorded, within
USERSYNC_RECONCILE_RESUME_WITHIN of the walk's start.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			waitLock := fs.Bool("wait-lock", false, "wait for a running sync to finish instead of exiting")
			asJSON := fs.Bool("json", false, "print the summary as JSON")
			return func(ctx context.Context, e *env, _ []string) error {
				pool, store, err := openStore(ctx, e, 8)
				if err != nil {
					return err
				}
				defer pool.Close()
				if err := refusePaused(ctx, e, pool); err != nil {
					return err
				}
				client, err := newAPIClient(ctx, e, store)
				if err != nil {
					return err
				}
				s, err := syncer.New(client, store, syncerConfig(e.cfg, e.logger))
				if err != nil {
					return err
				}
				sum, err := s.Reconcile(ctx,
					syncer.ReconcileRequest{WaitLock: *waitLock, MaxDeleteShare: e.cfg.ReconcileMaxDelete, Membership: e.cfg.ReconcileMembership})
				if errors.Is(err, warehouse.ErrLocked) {
					return fmt.Errorf("%w; run with --wait-lock to wait for it", err)
				}
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, sum)
				}
				printReconcile(e.stdout, sum)
				return nil
			}
		},
	}
}

func printReconcile(w io.Writer, s syncer.ReconcileSummary) {
	fmt.Fprintf(w, "reconcile run %d finished in %s\n", s.RunID, s.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "  scanned      %d user ids in %d pages\n", s.Scanned, s.ScanPages)
	if s.ScanResumed > 0 {
		fmt.Fprintf(w, "  resumed      the id walk of an interrupted reconcile after its %d pages\n", s.ScanResumed)
	}
	fmt.Fprintf(w, "  fetched      %d missing, %d stale, %d relinked, %d confirmed: %d inserted, %d updated, %d unchanged, %d quarantined\n",
		s.Missing, s.Stale, s.Relinked, s.Confirmed, s.Inserted, s.Updated, s.Unchanged, s.Quarantined)
	fmt.Fprintf(w, "  users        %d marked deleted, %d came back\n", s.Deleted, s.Undeleted)
	if s.Purged > 0 {
		fmt.Fprintf(w, "  purged       %d users deleted longer ago than USERSYNC_DELETED_RETENTION (%d versions)\n", s.Purged, s.PurgedVersions)
	}
	for _, res := range schema.Dimensions() {
		n := res.Table
		if c, ok := s.Dimensions[n]; ok {
			fmt.Fprintf(w, "  %-12s %d inserted, %d updated, %d marked deleted, %d came back\n", n, c.Inserted, c.Updated, c.Deleted, s.DimensionsUndeleted[n])
		}
	}
	m := s.Membership
	fmt.Fprintf(w, "  membership   %d teams listed: %d members, %d added, %d removed\n", m.Teams, m.Members, m.Added, m.Removed)
	fmt.Fprintf(w, "  api          %d requests, %d rate-limited, %d retried\n", s.Requests, s.RateLimited, s.Retries)
}
