package cli

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/jobs/fleet"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// newFleet returns the worker's fleet (package jobs/fleet): the
// environment's account, scheduled by schedules, and the registered ones,
// each resolved by the settings' own parsers.
func newFleet(e *env, pool *pgxpool.Pool, metrics *jobs.Metrics, schedules jobs.Schedules) (*fleet.Fleet, error) {
	cfg := e.fleetConfig()
	f, err := fleet.New(fleet.Config{Pool: pool, RiverSchema: e.riverSchema(), Metrics: metrics, Cache: cfg.AccountCache,
		Snapshots: cfg.SnapshotDir != "off", Env: accountSpec(e, &registry.Account{Name: jobs.DefaultAccount, Cfg: cfg}, schedules),
		Resolve: func(_ context.Context, a accounts.Account) (fleet.Spec, error) {
			// Resolved with the fleet's settings of now, not of the worker's start.
			c, err := (&registry.Fleet{Config: e.fleetConfig(), Getenv: e.getenv}).AccountConfig(a)
			if err != nil {
				return fleet.Spec{}, err
			}
			s, err := c.Schedules()
			if err != nil {
				return fleet.Spec{}, err
			}
			return accountSpec(e, &registry.Account{Name: a.Name, Cfg: c}, s), nil
		},
		Union: func(r *accounts.Registry) accounts.Union { return registry.Union(e.fleetConfig(), r) },
		Tick:  cfg.FleetTick, Logger: e.logger})
	if err != nil {
		return nil, usageError{err}
	}
	return f, nil
}

// accountSpec is a, scheduled by s, as the fleet opens it: its store, API
// client, syncer and snapshot writer, built from its Config alone.
func accountSpec(e *env, a *registry.Account, s jobs.Schedules) fleet.Spec {
	return fleet.Spec{Name: a.Name, Schema: a.Cfg.Schema, Schedules: s, SnapshotInterval: a.Cfg.SnapshotInterval(s),
		SyncInterval: jobs.ScheduleInterval(s.Sync, time.Now()),
		Open: func(ctx context.Context, store *warehouse.Store) (*jobs.Account, *jsonapi.Client, error) {
			ae := *e
			ae.cfg, ae.account, ae.logger = a.Cfg, a.Name, e.logger.With("account", a.Name)
			api, err := newWorkerAPIClient(ctx, &ae, store)
			if err != nil {
				return nil, nil, err
			}
			s, err := syncer.New(api, store, syncerConfig(ae.cfg, ae.logger))
			if err != nil {
				return nil, nil, err
			}
			acct := accountDeps(&ae, a.Name, s, store)
			if dir := e.fleetConfig().SnapshotDir; dir != "off" {
				sw, err := newSnapshotWriter(&ae, store.Pool(), dir)
				if err != nil {
					return nil, nil, err
				}
				acct.Snapshot = func(ctx context.Context) (jobs.SnapshotOutcome, error) { return writeSnapshotJob(ctx, &ae, sw) }
			}
			return acct, api, nil
		}}
}

// accountDeps is what the jobs of the account name in ae run with, but
// its snapshot writer.
func accountDeps(ae *env, name string, s *syncer.Syncer, store *warehouse.Store) *jobs.Account {
	cfg := ae.cfg
	return &jobs.Account{Name: name, Syncer: s, Store: store, SnapshotAfterSync: cfg.SnapshotAfterSync,
		AuthRemedy: ae.authRemedy(), MaxDeleteShare: cfg.ReconcileMaxDelete, ReconcileMembership: cfg.ReconcileMembership,
		Logger: ae.logger}
}
