package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// store returns the store of schema, made once while an account uses it.
func (f *Fleet) store(schema string) (*warehouse.Store, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.stores[schema]; ok {
		return s, nil
	}
	s, err := warehouse.NewStore(f.cfg.Pool, schema)
	if err != nil {
		return nil, fmt.Errorf("USERSYNC_SCHEMA: %w", err)
	}
	f.stores[schema] = s
	return s, nil
}

// Stores is how many warehouse stores the fleet keeps: the listed
// accounts' and the open ones', each schema once.
func (f *Fleet) Stores() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stores)
}

// pruneStores drops the stores no listed account and no open one uses (a
// removed account's, once it left the cache too). The caller holds mu.
func (f *Fleet) pruneStores() {
	used := map[string]bool{}
	if f.env.Store != nil {
		used[f.env.Store.Schema()] = true
	}
	for _, k := range f.known {
		if k.ok {
			used[k.reg.Store.Schema()] = true
		}
	}
	for el := f.order.Front(); el != nil; el = el.Next() {
		used[el.Value.(*openAccount).schema] = true
	}
	for s := range f.stores {
		if !used[s] {
			delete(f.stores, s)
		}
	}
}

// Registered implements jobs.ListAccounts: the environment's account, then
// the registered ones by name. It reads the registry's heads (in tx, when
// not nil) and parses the settings of the rows whose stamp changed since
// the last call (every row, the first time), each alone: a row that no
// longer parses is left out, with a warning once per change, and never
// stops the others.
func (f *Fleet) Registered(ctx context.Context, tx pgx.Tx) ([]jobs.Registered, error) {
	f.listMu.Lock()
	defer f.listMu.Unlock()
	reg, err := f.Registry()
	if err != nil {
		return nil, err
	}
	if tx != nil {
		reg = reg.In(tx)
	}
	if ok, err := f.registryExists(ctx, reg, tx); err != nil || !ok {
		return []jobs.Registered{f.env}, err
	}
	heads, err := reg.Heads(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the accounts: %w", err)
	}
	f.mu.Lock()
	known := f.known
	f.mu.Unlock()
	next := make(map[string]*knownAccount, len(heads))
	out := make([]jobs.Registered, 0, len(heads)+1)
	out = append(out, f.env)
	for _, h := range heads {
		k := known[h.Name]
		if k == nil || k.stamp != h.Stamp {
			if k, err = f.parse(ctx, reg, h); errors.Is(err, accounts.ErrNotFound) {
				continue // removed since the heads were read
			} else if err != nil {
				return nil, fmt.Errorf("reading the accounts: %w", err)
			}
		}
		next[h.Name] = k
		if k.ok {
			r := k.reg
			r.Paused = h.Paused
			out = append(out, r)
		}
	}
	f.mu.Lock()
	f.known = next
	for name := range f.hints {
		if next[name] == nil && name != jobs.DefaultAccount {
			delete(f.hints, name) // removed
		}
	}
	f.pruneStores()
	f.mu.Unlock()
	return out, nil
}

// registryExists says whether the registry's table exists, read until it
// does; the caller holds listMu. Without a transaction it is always yes:
// Heads reads a registry that does not exist as one with no account. In a
// transaction that read's error would abort it.
func (f *Fleet) registryExists(ctx context.Context, reg *accounts.Registry, tx pgx.Tx) (bool, error) {
	if tx == nil || f.registryMade {
		return true, nil
	}
	ok, err := reg.Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the accounts: %w", err)
	}
	f.registryMade = ok
	return ok, nil
}

// parse reads the row of h's account and resolves what the tick, the
// metrics and the sweeper need of it, warning when its settings are not
// valid.
func (f *Fleet) parse(ctx context.Context, reg *accounts.Registry, h accounts.Head) (*knownAccount, error) {
	a, err := reg.Get(ctx, h.Name)
	switch {
	case errors.Is(err, accounts.ErrBadSettings):
		f.cfg.Logger.WarnContext(ctx, "an account's settings are not valid; its jobs are not scheduled", "account", h.Name, "error", err.Error())
		return &knownAccount{stamp: h.Stamp}, nil
	case err != nil:
		return nil, err
	}
	k := &knownAccount{stamp: a.Stamp}
	spec, err := f.cfg.Resolve(ctx, a)
	if err != nil {
		f.cfg.Logger.WarnContext(ctx, "an account's settings are not valid; its jobs are not scheduled", "account", a.Name, "error", err.Error())
		return k, nil
	}
	store, err := f.store(spec.Schema)
	if err != nil {
		f.cfg.Logger.WarnContext(ctx, "an account's schema is not valid; its jobs are not scheduled", "account", a.Name, "error", err.Error())
		return k, nil
	}
	k.reg, k.ok = f.registered(spec, store), true
	return k, nil
}

// RefreshViews is the fleet's job usersync_views (jobs.ViewsWorker, every
// ViewsSettle): it remakes the union views when the registered accounts
// changed since they were made (accounts add --no-views), unless another
// process is remaking them. While accounts are being registered (one added
// or changed less than ViewsSettle ago) it waits: remade at every tick of a
// bulk registration, each time over every account, the views would cost
// in N² again, in the worker.
func (f *Fleet) RefreshViews(ctx context.Context) error {
	reg, err := f.Registry()
	if err != nil {
		return err
	}
	since, ok, err := reg.SinceChange(ctx)
	if err != nil {
		return fmt.Errorf("reading when the accounts last changed: %w", err)
	}
	if ok && since < ViewsSettle(f.cfg.Tick) {
		return nil
	}
	u := f.cfg.Union(reg)
	changed, err := u.RefreshIfStale(ctx, f.cfg.Pool)
	if errors.Is(err, accounts.ErrUnionNeedsPG15) {
		return nil // usersync migrate warns of it
	}
	if err != nil {
		return fmt.Errorf("remaking the union views: %w", err)
	}
	if changed {
		f.cfg.Logger.InfoContext(ctx, "remade the union views: the registered accounts changed", "schema", u.Schema)
	}
	return nil
}

// ViewsSettle is how long the registry stays unchanged before the fleet
// remakes the union views, and how often its job usersync_views looks:
// three ticks, at least 10 s.
func ViewsSettle(tick time.Duration) time.Duration { return max(3*tick, 10*time.Second) }
