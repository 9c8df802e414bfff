package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/check"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/dsn"
)

func checkCommand() command {
	return command{
		name:    "check",
		summary: "say whether this deployment can work: database, migrations, writes, reader role, API, token, budget, snapshots, schedules",
		details: `Runs every check and prints a line for each: ok or FAIL, what was
checked and what was found, and for a FAIL a line saying how to fix it. A check
that needs one that failed (the token needs the API's settings, the reader role
needs the migrations) fails as not checked. Exits 0 only when every check
passes, 1 otherwise (2 for an invalid setting). It sends one request to the API
(a page of one user; with OAuth, after a token refresh, which rotates the stored
refresh token as every refresh does) and writes and removes a small file in the
deployment's snapshot folder. The worker runs the same checks at start, but for
the database ones it has waited for, and logs the first that fails.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, `print as JSON: {"version": 1, "checks": [{"name", "ok", "detail", "fix"}], "ok": bool}`)
			return func(ctx context.Context, e *env, _ []string) error {
				pool, err := newPool(ctx, e, 4)
				if err != nil {
					return err
				}
				defer pool.Close()
				store, err := warehouse.NewStore(pool, e.cfg.Schema)
				if err != nil {
					return usageError{err}
				}
				r := check.Run(ctx, checkOptions(e, store, nil), true)
				if r.DatabaseOK {
					if f, err := registry.New(pool, e.fleetConfig(), e.getenv, e.logger); err == nil {
						r.Notices = f.Notices(ctx)
					}
				}
				if *asJSON {
					if err := writeJSON(e.stdout, r.JSON()); err != nil {
						return fmt.Errorf("printing the checks: %w", err)
					}
				} else {
					r.WriteText(e.stdout)
				}
				return r.Err()
			}
		},
	}
}

// checkOptions are the checks of e's settings; api is the worker's own
// client (nil: the checks build one).
func checkOptions(e *env, store *warehouse.Store, api *jsonapi.Client) check.Options {
	cfg := e.cfg
	o := check.Options{Store: store, RiverSchema: e.riverSchema(), DatabaseShown: dsn.Redact(cfg.DatabaseURL),
		Ping:       func(ctx context.Context) error { return pingPool(ctx, e, store.Pool()) },
		ReaderRole: cfg.ReaderRole, APISettings: cfg.RequireAPI(), APIURL: cfg.APIURL, OAuth: cfg.OAuthTokenURL != "", API: api,
		NewAPI:     func(ctx context.Context) (*jsonapi.Client, error) { return newAPIClient(ctx, e, store) },
		AuthRemedy: e.authRemedy(), LoginCommand: jobs.LoginCommand(e.account), APIBudget: cfg.APIBudget, SnapshotDir: cfg.SnapshotDir,
		S3: snapshot.S3Options{Endpoint: cfg.S3Endpoint, Region: cfg.S3Region, AccessKeyID: cfg.S3AccessKeyID,
			SecretAccessKey: cfg.S3SecretAccessKey, PathStyle: cfg.S3PathStyle}}
	if ts, err := tokenStore(e, store); err == nil && o.OAuth {
		o.Grants = ts
	}
	s, err := cfg.Schedules()
	o.SchedulesErr = err
	o.Schedules = []check.Schedule{{What: "sync", Spec: cfg.SyncSchedule, Next: s.Sync},
		{What: "reconcile", Spec: cfg.ReconcileSchedule, Next: s.Reconcile}, {What: "snapshot", Spec: cfg.SnapshotSchedule, Next: s.Snapshot}}
	return o
}

// logStartChecks runs the checks the worker has not done yet with the
// worker's own API client, and logs the first that fails in usersync
// check's words. It never stops the worker: a job meets the same failure
// and says so too.
func logStartChecks(ctx context.Context, e *env, store *warehouse.Store, api *jsonapi.Client) {
	check.Run(ctx, checkOptions(e, store, api), false).Log(ctx, e.logger)
}
