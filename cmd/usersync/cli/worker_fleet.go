package cli

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// fleet is the worker's view of the accounts (#41): it opens an account for
// each job (jobs.AccountSource) and lists the registered ones for the
// fleet's tick, the metrics and the sweeper (jobs.ListAccounts), both from
// loadAccounts, so that an account added, changed, paused or removed is
// seen without a restart.
//
// An opened account (its API client, syncer and snapshot writer) is kept
// for the account's next jobs, in a cache of at most USERSYNC_ACCOUNT_CACHE
// accounts, the least recently used closed first: so a worker's memory
// stays flat in the number of accounts, while a busy account's client keeps
// what it learnt between jobs (the rate limit last reported, which paces the
// next requests within USERSYNC_API_BUDGET; the OAuth access token, which
// each rebuild would refresh, rotating the refresh token). An entry is
// rebuilt when its account's settings change. The default account is opened
// once, at start, as before accounts.
type fleet struct {
	e       *env
	pool    *pgxpool.Pool
	load    func(ctx context.Context, e *env, pool *pgxpool.Pool) ([]account, error)
	metrics *jobs.Metrics
	def     *jobs.Account

	mu     sync.Mutex
	max    int
	order  *list.List               // of *openAccount, most recently used first
	open   map[string]*list.Element // by account name
	stores map[string]*warehouse.Store
}

// openAccount is a registered account opened for its jobs.
type openAccount struct {
	name string
	fp   [32]byte // of the account's settings: a change rebuilds it
	acct *jobs.Account
	api  *jsonapi.Client
}

func newFleet(e *env, pool *pgxpool.Pool, metrics *jobs.Metrics, def *jobs.Account) *fleet {
	return &fleet{e: e, pool: pool, load: loadAccounts, metrics: metrics, def: def, max: max(e.cfg.AccountCache, 1),
		order: list.New(), open: map[string]*list.Element{}, stores: map[string]*warehouse.Store{}}
}

// find returns the account named name, nil when no such account is
// registered.
func (f *fleet) find(ctx context.Context, name string) (*account, error) {
	accounts, err := f.load(ctx, f.e, f.pool)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts: %w", err)
	}
	for i := range accounts {
		if accounts[i].Name == name {
			return &accounts[i], nil
		}
	}
	return nil, nil
}

// Open implements jobs.AccountSource.
func (f *fleet) Open(ctx context.Context, name string) (*jobs.Account, error) {
	if name == jobs.DefaultAccount {
		return f.def, nil
	}
	a, err := f.find(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case a == nil:
		return nil, jobs.ErrAccountRemoved
	case a.Paused:
		return nil, jobs.ErrAccountPaused
	case a.Err != nil:
		return nil, a.Err
	}
	fp := fingerprint(a.Cfg)
	f.mu.Lock()
	if el, ok := f.open[name]; ok && el.Value.(*openAccount).fp == fp {
		f.order.MoveToFront(el)
		f.mu.Unlock()
		return el.Value.(*openAccount).acct, nil
	}
	f.mu.Unlock()
	oa, err := f.build(ctx, a)
	if err != nil {
		return nil, err
	}
	oa.fp = fp
	f.keep(oa)
	return oa.acct, nil
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
}

// accountEnv is the environment of a's jobs: its configuration, and a
// logger that names it.
func (f *fleet) accountEnv(a *account) *env {
	ae := *f.e
	ae.cfg = a.Cfg
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
	return &openAccount{name: a.Name, acct: acct, api: api}, nil
}

// accountDeps is what the jobs of the account name in ae run with, but
// its snapshot writer.
func accountDeps(ae *env, name string, s *syncer.Syncer, store *warehouse.Store) *jobs.Account {
	cfg := ae.cfg
	return &jobs.Account{Name: name, Syncer: s, Store: store, SnapshotAfterSync: cfg.SnapshotAfterSync,
		AuthRemedy: authRemedy(cfg), MaxDeleteShare: cfg.ReconcileMaxDelete, ReconcileMembership: cfg.ReconcileMembership,
		Logger: ae.logger}
}

// store returns the store of schema, made once.
func (f *fleet) store(schema string) (*warehouse.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.stores[schema]; ok {
		return s, nil
	}
	s, err := warehouse.NewStore(f.pool, schema)
	if err != nil {
		return nil, fmt.Errorf("USERSYNC_SCHEMA: %w", err)
	}
	f.stores[schema] = s
	return s, nil
}

// Registered implements jobs.ListAccounts: every account but the default
// one. An account whose schedules do not parse is listed without them
// (logged): its warehouse is still watched.
func (f *fleet) Registered(ctx context.Context) ([]jobs.Registered, error) {
	accounts, err := f.load(ctx, f.e, f.pool)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts: %w", err)
	}
	out := make([]jobs.Registered, 0, len(accounts))
	for _, a := range accounts {
		if a.Name == jobs.DefaultAccount {
			continue
		}
		if a.Err != nil {
			f.e.logger.WarnContext(ctx, "an account's settings are not valid; its jobs are not scheduled", "account", a.Name, "error", a.Err.Error())
			continue
		}
		store, err := f.store(a.Cfg.Schema)
		if err != nil {
			f.e.logger.WarnContext(ctx, "an account's schema is not valid; its jobs are not scheduled", "account", a.Name, "error", err.Error())
			continue
		}
		r := jobs.Registered{Name: a.Name, Paused: a.Paused, Store: store, Snapshots: f.e.cfg.SnapshotDir != "off"}
		if r.Schedules, err = parseSchedules(a.Cfg, nil); err != nil {
			f.e.logger.WarnContext(ctx, "an account's schedule is not valid; its jobs are not scheduled", "account", a.Name, "error", err.Error())
			r.Schedules = jobs.Schedules{}
		}
		r.SnapshotInterval = snapshotInterval(a.Cfg, r.Schedules)
		out = append(out, r)
	}
	return out, nil
}

// fingerprint identifies an account's settings (secrets included, never
// printed): an entry opened with others is rebuilt.
func fingerprint(cfg Config) [32]byte {
	cfg.PII = nil // derived from the PII settings, which are compared; a pointer
	return sha256.Sum256(fmt.Appendf(nil, "%#v", cfg))
}

// defaultLogger is the logger of the default account's jobs.
func defaultLogger(e *env) *slog.Logger { return e.logger.With("account", jobs.DefaultAccount) }
