package cli

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// fleet is the worker's view of the accounts (#41): it opens an account for
// each job (jobs.AccountSource), reading that account's row alone, and lists
// the registered ones for the fleet's tick, the metrics and the sweeper
// (jobs.ListAccounts), so that an account added, changed, paused or removed
// is seen without a restart.
//
// What it parses of a stored row is kept while the row's stamp (the md5 of
// its settings) stays: the tick, every few seconds, reads the accounts'
// names, schemas, pauses and stamps, and parses again only the rows that
// changed, warning once per change of a row whose settings are not valid
// (and once when the worker starts), not at every tick.
//
// An opened account (its API client, syncer and snapshot writer) is kept
// for the account's next jobs, in a cache of at most USERSYNC_ACCOUNT_CACHE
// accounts, the least recently used closed first: so a worker's memory
// stays flat in the number of accounts, while a busy account's client keeps
// what it learnt between jobs (the rate limit last reported, which paces the
// next requests within USERSYNC_API_BUDGET; the OAuth access token, which
// each rebuild would refresh, rotating the refresh token). An entry is
// rebuilt when its account's stored settings change.
//
// The environment's account (the default one) is an account of the fleet
// like the others: listed first, opened and cached by the same code; only
// its settings are read from the environment, once, instead of a row.
type fleet struct {
	e       *env
	pool    *pgxpool.Pool
	metrics *jobs.Metrics
	env     jobs.Registered // the environment's account as the tick sees it

	listMu sync.Mutex // one Registered at a time: each change is parsed (and warned about) once

	mu    sync.Mutex
	reg   *accounts.Registry
	max   int
	order *list.List               // of *openAccount, most recently used first
	open  map[string]*list.Element // by account name
	known map[string]*knownAccount // every registered account as Registered last read it, by name
	// stores are the warehouse stores by schema: those of the registered
	// accounts (the metrics and the sweeper read each one's warehouse at
	// every scrape and sweep) and of the accounts open; one leaves with
	// the last of the two (pruneStores).
	stores map[string]*warehouse.Store
}

// knownAccount is what Registered parsed of an account's stored row.
type knownAccount struct {
	stamp string
	reg   jobs.Registered // its Paused is read at every tick
	ok    bool            // false: its settings are not valid, it is not scheduled
}

// openAccount is a registered account opened for its jobs.
type openAccount struct {
	name   string
	stamp  string // of the stored settings it was opened with: a change rebuilds it
	schema string
	acct   *jobs.Account
	api    *jsonapi.Client
}

// envStamp is the stamp of the environment's account, whose settings do
// not change while the worker runs.
const envStamp = "environment"

// newFleet returns the fleet of e's deployment, the environment's account
// scheduled by schedules.
func newFleet(e *env, pool *pgxpool.Pool, metrics *jobs.Metrics, schedules jobs.Schedules) (*fleet, error) {
	f := &fleet{e: e, pool: pool, metrics: metrics, max: max(e.cfg.AccountCache, 1),
		order: list.New(), open: map[string]*list.Element{}, known: map[string]*knownAccount{}, stores: map[string]*warehouse.Store{}}
	cfg := e.fleetConfig()
	store, err := f.store(cfg.Schema)
	if err != nil {
		return nil, usageError{err}
	}
	f.env = jobs.Registered{Name: jobs.DefaultAccount, Env: true, Store: store, Schedules: schedules,
		SnapshotInterval: snapshotInterval(cfg, schedules), SyncInterval: jobs.ScheduleInterval(schedules.Sync, time.Now()),
		Snapshots: cfg.SnapshotDir != "off"}
	return f, nil
}

// registry is the fleet's registry, made once.
func (f *fleet) registry() (*accounts.Registry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reg == nil {
		reg, err := accounts.New(f.pool, f.e.riverSchema())
		if err != nil {
			return nil, err
		}
		f.reg = reg
	}
	return f.reg, nil
}

// Open implements jobs.AccountSource. It reads the account's head (pause
// and stamp); its settings only when they changed since it was opened.
func (f *fleet) Open(ctx context.Context, name string) (*jobs.Account, error) {
	if name == jobs.DefaultAccount {
		oa, err := f.openEnv(ctx)
		if err != nil {
			return nil, err
		}
		return oa.acct, nil
	}
	reg, err := f.registry()
	if err != nil {
		return nil, err
	}
	h, err := reg.Head(ctx, name)
	switch {
	case errors.Is(err, accounts.ErrNotFound):
		return nil, jobs.ErrAccountRemoved
	case err != nil:
		return nil, err
	case h.Paused:
		return nil, jobs.ErrAccountPaused
	}
	f.mu.Lock()
	if el, ok := f.open[name]; ok && el.Value.(*openAccount).stamp == h.Stamp {
		f.order.MoveToFront(el)
		f.mu.Unlock()
		return el.Value.(*openAccount).acct, nil
	}
	f.mu.Unlock()
	a, err := reg.Get(ctx, name)
	if errors.Is(err, accounts.ErrNotFound) {
		return nil, jobs.ErrAccountRemoved
	}
	if err != nil {
		return nil, err
	}
	cfg, err := storedConfig(f.e, a)
	if err != nil {
		return nil, err
	}
	oa, err := f.build(ctx, &account{Name: a.Name, Cfg: cfg})
	if err != nil {
		return nil, err
	}
	oa.stamp = a.Stamp
	f.keep(oa)
	return oa.acct, nil
}

// openEnv opens the environment's account, from the cache when it is
// there.
func (f *fleet) openEnv(ctx context.Context) (*openAccount, error) {
	f.mu.Lock()
	if el, ok := f.open[jobs.DefaultAccount]; ok {
		f.order.MoveToFront(el)
		f.mu.Unlock()
		return el.Value.(*openAccount), nil
	}
	f.mu.Unlock()
	oa, err := f.build(ctx, &account{Name: jobs.DefaultAccount, Cfg: f.e.fleetConfig()})
	if err != nil {
		return nil, err
	}
	oa.stamp = envStamp
	f.keep(oa)
	return oa, nil
}

// keep caches oa, replacing the account's older entry and closing the
// least recently used beyond the bound.
func (f *fleet) keep(oa *openAccount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.open[oa.name]; ok {
		f.order.Remove(el)
	}
	f.open[oa.name] = f.order.PushFront(oa)
	f.metrics.WatchAPI(oa.name, oa.api)
	for f.order.Len() > f.max {
		old := f.order.Remove(f.order.Back()).(*openAccount)
		delete(f.open, old.name)
		f.metrics.ForgetAPI(old.name, old.api)
	}
	f.pruneStores()
}

// accountEnv is the environment of a's jobs: its configuration, and a
// logger that names it.
func (f *fleet) accountEnv(a *account) *env {
	ae := *f.e
	ae.cfg = a.Cfg
	ae.account = a.Name
	ae.logger = f.e.logger.With("account", a.Name)
	return &ae
}

// build opens a: its store, API client, syncer and snapshot writer.
func (f *fleet) build(ctx context.Context, a *account) (*openAccount, error) {
	ae := f.accountEnv(a)
	store, err := f.store(a.Cfg.Schema)
	if err != nil {
		return nil, err
	}
	api, err := newWorkerAPIClient(ctx, ae, store)
	if err != nil {
		return nil, err
	}
	acct := accountDeps(ae, a.Name, syncer.New(api, store, ae.cfg.syncerConfig(ae.logger)), store)
	if f.e.cfg.SnapshotDir != "off" {
		sw, err := newSnapshotWriter(ae, f.pool, f.e.cfg.SnapshotDir)
		if err != nil {
			return nil, err
		}
		acct.Snapshot = func(ctx context.Context) (jobs.SnapshotOutcome, error) { return writeSnapshotJob(ctx, ae, sw) }
	}
	f.metrics.Seen(a.Name)
	return &openAccount{name: a.Name, schema: a.Cfg.Schema, acct: acct, api: api}, nil
}

// accountDeps is what the jobs of the account name in ae run with, but
// its snapshot writer.
func accountDeps(ae *env, name string, s *syncer.Syncer, store *warehouse.Store) *jobs.Account {
	cfg := ae.cfg
	return &jobs.Account{Name: name, Syncer: s, Store: store, SnapshotAfterSync: cfg.SnapshotAfterSync,
		AuthRemedy: ae.authRemedy(), MaxDeleteShare: cfg.ReconcileMaxDelete, ReconcileMembership: cfg.ReconcileMembership,
		Logger: ae.logger}
}
