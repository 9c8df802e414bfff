package jobs

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// fleetEnv is a fleet of accounts, each with its own simulated API (over
// HTTP) and its own migrated schema in one database, and a River client
// serving them all: the registry is testAccounts, whose accounts a test
// pauses and removes as the registry would.
type fleetEnv struct {
	pool    *pgxpool.Pool
	river   string // River's schema
	logs    *lockedBuffer
	metrics *Metrics
	client  *river.Client[pgx.Tx]
	reg     *testAccounts
}

// testAccount is one account of a fleetEnv.
type testAccount struct {
	name     string
	sim      *apisim.Server
	store    *warehouse.Store
	acct     *Account
	schedule Schedules
	paused   bool
	removed  bool
}

// testAccounts implements AccountSource and ListAccounts over the accounts.
type testAccounts struct {
	mu       sync.Mutex
	accounts []*testAccount
}

// Opened is nil: the tests' accounts run every sync in full.
func (r *testAccounts) Opened(string) *Account { return nil }

func (r *testAccounts) Open(_ context.Context, name string) (*Account, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.accounts, func(a *testAccount) bool { return a.name == name })
	switch {
	case i < 0 || r.accounts[i].removed:
		return nil, ErrAccountRemoved
	case r.accounts[i].paused:
		return nil, ErrAccountPaused
	}
	return r.accounts[i].acct, nil
}

func (r *testAccounts) list(context.Context, pgx.Tx) ([]Registered, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Registered
	for _, a := range r.accounts {
		if !a.removed {
			out = append(out, Registered{Name: a.name, Paused: a.paused, Store: a.store, Schedules: a.schedule})
		}
	}
	return out, nil
}

func (r *testAccounts) set(name string, f func(a *testAccount)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.accounts {
		if a.name == name {
			f(a)
		}
	}
}

// accountSpec describes an account of a fleetEnv.
type accountSpec struct {
	name     string
	opts     apisim.Options
	token    string // the client's; the simulator accepts "right"
	schedule string // the sync schedule, "off" for none
	// reconcile is the reconcile schedule; "" for none.
	reconcile string
	paused    bool
}

func newFleetEnv(t *testing.T, specs ...accountSpec) *fleetEnv {
	t.Helper()
	return newFleetEnvWith(t, nil, specs...)
}

// newFleetEnvWith is newFleetEnv whose workers' dependencies and client's
// configuration configure changes (nil: none) before the client starts.
func newFleetEnvWith(t *testing.T, configure func(*Deps, *ClientConfig), specs ...accountSpec) *fleetEnv {
	t.Helper()
	ctx := context.Background()
	e := &fleetEnv{pool: schematest.NewPool(t, 20), logs: &lockedBuffer{}, reg: &testAccounts{}}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e.river = RiverSchema(schematest.NewSchemaName(t, e.pool))
	if _, err := MigrateRiver(ctx, e.pool, e.river, logger); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		e.reg.accounts = append(e.reg.accounts, newTestAccount(t, e.pool, logger, s))
	}
	e.metrics = NewMetrics(MetricsConfig{Pool: e.pool, Store: e.reg.accounts[0].store, Schema: "fleet", RiverSchema: e.river,
		Accounts: e.reg.list, Logger: logger})
	deps := &Deps{Accounts: e.reg, Drain: make(chan struct{}), Observe: e.metrics.Observe, ObserveReconcile: e.metrics.ObserveReconcile,
		ObserveSnapshot: e.metrics.ObserveSnapshot, ObserveYield: e.metrics.ObserveYield, Logger: logger}
	cfg := ClientConfig{Pool: e.pool, RiverSchema: e.river, Deps: deps, Accounts: e.reg.list, FleetTick: time.Second,
		MaxWorkers: 1, LongWorkers: 1, SnapshotWorkers: 1, SoftStop: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	if configure != nil {
		configure(deps, &cfg)
	}
	var err error
	e.client, err = NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the client stopped (cleanups run last first)
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.String())
		}
	})
	startClient(t, e.client)
	return e
}

// migratedRiver returns a pool of conns connections and a River schema
// migrated for the test (schematest drops it after the test).
func migratedRiver(t *testing.T, conns int32) (*pgxpool.Pool, string) {
	t.Helper()
	pool := schematest.NewPool(t, conns)
	riverSchema := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(context.Background(), pool, riverSchema, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return pool, riverSchema
}

// startClient starts client and, when the test ends, stops it, cancelling
// the jobs still running.
func startClient(t *testing.T, client *river.Client[pgx.Tx]) {
	t.Helper()
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = client.StopAndCancel(stopCtx)
	})
}

// newTestAccount migrates the account's schema and serves its simulated
// API.
func newTestAccount(t *testing.T, pool *pgxpool.Pool, logger *slog.Logger, s accountSpec) *testAccount {
	t.Helper()
	ctx := context.Background()
	s.opts.Token = "right"
	sim := apisim.New(s.opts)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	schemaName := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: schemaName}); err != nil {
		t.Fatal(err)
	}
	store, err := warehouse.NewStore(pool, schemaName)
	if err != nil {
		t.Fatal(err)
	}
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken(s.token), MaxRateLimitWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	alog := logger.With("account", s.name)
	sched, err := ParseSchedule("sync", s.schedule, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rec Schedule
	if s.reconcile != "" {
		if rec, err = ParseSchedule("reconcile", s.reconcile, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	sy, err := syncer.New(client, store, syncer.Config{Logger: alog})
	if err != nil {
		t.Fatal(err)
	}
	return &testAccount{name: s.name, sim: sim, store: store, schedule: Schedules{Sync: sched, Reconcile: rec}, paused: s.paused,
		acct: &Account{Name: s.name, Syncer: sy, Store: store, Logger: alog}}
}

// jobTimes are when the completed jobs of an account and kind were
// attempted and finalized, oldest first.
func (e *fleetEnv) jobTimes(t *testing.T, account, kind string) (attempted, finalized []time.Time) {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT attempted_at, finalized_at FROM "`+e.river+`".river_job
		WHERE kind = $1 AND coalesce(nullif(args->>'account', ''), 'default') = $2 AND state = 'completed' ORDER BY finalized_at`, kind, account)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, f time.Time
		if err := rows.Scan(&a, &f); err != nil {
			t.Fatal(err)
		}
		attempted, finalized = append(attempted, a), append(finalized, f)
	}
	return attempted, finalized
}

// count runs a query returning one number on River's schema ($river).
func (e *fleetEnv) count(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.pool.QueryRow(context.Background(), strings.ReplaceAll(q, "$river", `"`+e.river+`"`), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
