// Package fleet owns a worker's accounts at run time: it opens each job's
// account (jobs.AccountSource), keeping the opened ones in a bounded cache,
// lists the accounts for the fleet's tick, the metrics and the sweeper
// (jobs.ListAccounts), and remakes the union views once the registry
// settles. The environment's account is one of them, listed first: only its
// settings come from the environment instead of a row of the registry.
package fleet

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// Spec is an account's settings, resolved, as the fleet needs them.
type Spec struct {
	Name      string
	Schema    string
	Schedules jobs.Schedules
	// SnapshotInterval and SyncInterval are jobs.Registered's.
	SnapshotInterval, SyncInterval time.Duration
	// Open builds what the account's jobs run with over its store, and
	// its API client, whose counters the metrics read.
	Open func(ctx context.Context, store *warehouse.Store) (*jobs.Account, *jsonapi.Client, error)
}

// Config is what a Fleet is made of.
type Config struct {
	Pool        *pgxpool.Pool
	RiverSchema string // the fleet's: its registry's and job queue's
	Metrics     *jobs.Metrics
	// Cache is how many opened accounts are kept (USERSYNC_ACCOUNT_CACHE).
	Cache int
	// Snapshots says whether snapshots are written.
	Snapshots bool
	// Env is the environment's account.
	Env Spec
	// Resolve resolves a registered account's row; its error says why the
	// row's settings are not valid (the account is then not scheduled).
	Resolve func(ctx context.Context, a accounts.Account) (Spec, error)
	// Union is the union views over the registry's accounts.
	Union func(reg *accounts.Registry) accounts.Union
	// Tick is the fleet's tick (USERSYNC_FLEET_TICK), which paces the
	// remakes of the views (ViewsSettle).
	Tick   time.Duration
	Logger *slog.Logger
}

// Fleet is the worker's view of the accounts: it opens an account for each
// job, reading that account's row alone, and lists them for the fleet's
// tick, so that an account added, changed, paused or removed is seen
// without a restart.
//
// What it parses of a stored row is kept while the row's stamp (the md5 of
// its settings) stays: the tick reads the accounts' names, schemas, pauses
// and stamps, and parses again only the rows that changed, warning once
// per change of a row whose settings are not valid, not at every tick.
//
// An opened account (its API client, syncer and snapshot writer) is kept
// for its next jobs, in a cache of at most Config.Cache accounts, the least
// recently used closed first: a worker's memory stays flat in the number of
// accounts, while a busy account's client keeps what it learnt between jobs
// (the rate limit last reported; the OAuth access token, which each rebuild
// would refresh). An entry is rebuilt when its stored settings change.
type Fleet struct {
	cfg Config
	env jobs.Registered

	listMu       sync.Mutex // one Registered at a time: each change is parsed (and warned about) once
	registryMade bool       // the registry's table was seen (under listMu)

	mu    sync.Mutex
	reg   *accounts.Registry
	order *list.List               // of *openAccount, most recently used first
	open  map[string]*list.Element // by account name
	known map[string]*knownAccount // every registered account as Registered last read it, by name
	// stores are the warehouse stores by schema: the listed accounts'
	// and the open ones'; one leaves with the last of the two.
	stores map[string]*warehouse.Store
	// hints are the quiet-run hints of accounts closed by the cache's
	// bound or rebuilt, handed to their next opening (syncer.QuietHint).
	hints map[string]syncer.QuietHint
}

// knownAccount is what Registered parsed of an account's stored row.
type knownAccount struct {
	stamp string
	reg   jobs.Registered // its Paused is read at every tick
	ok    bool            // false: its settings are not valid, it is not scheduled
}

// openAccount is an account opened for its jobs.
type openAccount struct {
	name   string
	stamp  string // of the settings it was opened with: a change rebuilds it
	schema string
	acct   *jobs.Account
	api    *jsonapi.Client
}

// envStamp is the stamp of the environment's account, whose settings do
// not change while the worker runs.
const envStamp = "environment"

// New returns the fleet of cfg; its error is the environment's schema's.
func New(cfg Config) (*Fleet, error) {
	f := &Fleet{cfg: cfg, order: list.New(), open: map[string]*list.Element{}, known: map[string]*knownAccount{},
		stores: map[string]*warehouse.Store{}, hints: map[string]syncer.QuietHint{}}
	f.cfg.Cache = max(cfg.Cache, 1)
	store, err := f.store(cfg.Env.Schema)
	if err != nil {
		return nil, err
	}
	f.env = f.registered(cfg.Env, store)
	f.env.Env = true
	return f, nil
}

func (f *Fleet) registered(s Spec, store *warehouse.Store) jobs.Registered {
	return jobs.Registered{Name: s.Name, Store: store, Schedules: s.Schedules, SnapshotInterval: s.SnapshotInterval,
		SyncInterval: s.SyncInterval, Snapshots: f.cfg.Snapshots}
}

// Registry is the fleet's registry, made once.
func (f *Fleet) Registry() (*accounts.Registry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reg == nil {
		reg, err := accounts.New(f.cfg.Pool, f.cfg.RiverSchema)
		if err != nil {
			return nil, err
		}
		f.reg = reg
	}
	return f.reg, nil
}

// Open implements jobs.AccountSource. It reads the account's head (pause
// and stamp); its settings only when they changed since it was opened.
func (f *Fleet) Open(ctx context.Context, name string) (*jobs.Account, error) {
	if name == jobs.DefaultAccount {
		oa, err := f.openSpec(ctx, f.cfg.Env, envStamp, nil)
		if err != nil {
			return nil, err
		}
		return oa.acct, nil
	}
	reg, err := f.Registry()
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
	if oa := f.cached(name, h.Stamp); oa != nil {
		return oa.acct, nil
	}
	a, err := reg.Get(ctx, name)
	if errors.Is(err, accounts.ErrNotFound) {
		return nil, jobs.ErrAccountRemoved
	}
	if err != nil {
		return nil, err
	}
	spec, err := f.cfg.Resolve(ctx, a)
	if err != nil {
		return nil, err
	}
	sql, args := reg.Guard(name, a.Stamp)
	oa, err := f.openSpec(ctx, spec, a.Stamp, &warehouse.Guard{SQL: sql, Args: args})
	if err != nil {
		return nil, err
	}
	return oa.acct, nil
}

// Opened implements jobs.AccountSource: the account when it is open,
// reading nothing; a registered one's Guard (set by Open) is the
// registry's condition that it is still registered, not paused, with the
// settings it was opened with.
func (f *Fleet) Opened(name string) *jobs.Account {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, ok := f.open[name]
	if !ok {
		return nil
	}
	f.order.MoveToFront(el)
	return el.Value.(*openAccount).acct
}

// OpenEnv opens the environment's account and returns its API client
// (which the checks at a worker's start use).
func (f *Fleet) OpenEnv(ctx context.Context) (*jsonapi.Client, error) {
	oa, err := f.openSpec(ctx, f.cfg.Env, envStamp, nil)
	if err != nil {
		return nil, err
	}
	return oa.api, nil
}

// EnvStore is the environment's account's store.
func (f *Fleet) EnvStore() *warehouse.Store { return f.env.Store }

// cached returns the account's open entry when it was opened with stamp.
func (f *Fleet) cached(name, stamp string) *openAccount {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.open[name]; ok && el.Value.(*openAccount).stamp == stamp {
		f.order.MoveToFront(el)
		return el.Value.(*openAccount)
	}
	return nil
}

// openSpec opens s's account from the cache, or builds and caches it
// with guard.
func (f *Fleet) openSpec(ctx context.Context, s Spec, stamp string, guard *warehouse.Guard) (*openAccount, error) {
	if oa := f.cached(s.Name, stamp); oa != nil {
		return oa, nil
	}
	store, err := f.store(s.Schema)
	if err != nil {
		return nil, err
	}
	acct, api, err := s.Open(ctx, store)
	if err != nil {
		return nil, err
	}
	acct.Guard = guard
	f.mu.Lock()
	if h, ok := f.hints[s.Name]; ok && acct.Syncer != nil {
		acct.Syncer.SetQuietHint(h)
		delete(f.hints, s.Name)
	}
	f.mu.Unlock()
	if f.cfg.Metrics != nil {
		f.cfg.Metrics.Seen(s.Name)
	}
	oa := &openAccount{name: s.Name, stamp: stamp, schema: s.Schema, acct: acct, api: api}
	f.keep(oa)
	return oa, nil
}

// keep caches oa, replacing the account's older entry and closing the
// least recently used beyond the bound.
func (f *Fleet) keep(oa *openAccount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.open[oa.name]; ok {
		f.order.Remove(el)
		f.keepHint(el.Value.(*openAccount))
	}
	f.open[oa.name] = f.order.PushFront(oa)
	if f.cfg.Metrics != nil {
		f.cfg.Metrics.WatchAPI(oa.name, oa.api)
	}
	for f.order.Len() > f.cfg.Cache {
		old := f.order.Remove(f.order.Back()).(*openAccount)
		delete(f.open, old.name)
		f.keepHint(old)
		if f.cfg.Metrics != nil {
			f.cfg.Metrics.ForgetAPI(old.name, old.api)
		}
	}
	f.pruneStores()
}

// keepHint keeps the quiet-run hint of oa, which is being closed, for
// its account's next opening. f.mu is held.
func (f *Fleet) keepHint(oa *openAccount) {
	if oa.acct.Syncer != nil {
		f.hints[oa.name] = oa.acct.Syncer.QuietHint()
	}
}

// SetCache changes how many opened accounts are kept; those beyond it
// are closed at the next account's opening.
func (f *Fleet) SetCache(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg.Cache = max(n, 1)
}

// Cached names the accounts kept open, the most recently used first.
func (f *Fleet) Cached() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for el := f.order.Front(); el != nil; el = el.Next() {
		names = append(names, el.Value.(*openAccount).name)
	}
	return names
}
