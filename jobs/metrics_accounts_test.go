package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestSlowAccountKeepsOthersSeries: an account whose tables are locked
// (slow) and one whose schema is gone (broken) cost their own series only:
// every other account's gauges are in the scrape, each account's
// usersync_account_scrape_up says whether it was read, and the scrape ends
// within its bound (one slow account blanked the others').
func TestSlowAccountKeepsOthersSeries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 10)
	river := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	def, slow, good, late := migratedStore(t, pool), migratedStore(t, pool), migratedStore(t, pool), migratedStore(t, pool)
	broken, err := warehouse.NewStore(pool, schematest.NewSchemaName(t, pool)) // never migrated
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	q := schema.QuoteIdentifier(slow.Schema())
	if _, err := tx.Exec(ctx, `LOCK TABLE `+q+`.users, `+q+`.sync_state, `+q+`.sync_runs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	list := func(context.Context, pgx.Tx) ([]Registered, error) {
		return []Registered{{Name: DefaultAccount, Env: true, Store: def, Snapshots: true}, {Name: "slow", Store: slow, Snapshots: true}, {Name: "broken", Store: broken},
			{Name: "good", Store: good, Snapshots: true}, {Name: "late", Store: late}}, nil
	}
	m := NewMetrics(MetricsConfig{Pool: pool, Store: def, Schema: "fleet", RiverSchema: river, Snapshots: true, Accounts: list,
		Logger: slog.New(slog.DiscardHandler)})

	began := time.Now()
	got := gatherByAccount(t, m) // metric, account: value
	took := time.Since(began)
	for account, want := range map[string]float64{DefaultAccount: 1, "good": 1, "late": 1, "slow": 0, "broken": 0} {
		if v, ok := got["usersync_account_scrape_up"][account]; !ok || v != want {
			t.Errorf("usersync_account_scrape_up{account=%q} = %v (present %v), want %v", account, v, ok, want)
		}
	}
	for _, account := range []string{DefaultAccount, "good", "late"} {
		if _, ok := got["usersync_users_live"][account]; !ok {
			t.Errorf("usersync_users_live{account=%q} is missing: another account's read blanked it", account)
		}
	}
	for _, account := range []string{"slow", "broken"} {
		if _, ok := got["usersync_users_live"][account]; ok {
			t.Errorf("usersync_users_live{account=%q} is reported though its warehouse could not be read", account)
		}
	}
	if bound := 8 * time.Second; took > bound { // scrapeTimeout
		t.Errorf("the scrape took %s, more than its bound %s", took, bound)
	}
}

// TestAccountScheduleSeries: each account exports whether it is paused, its
// own sync interval and its last successful sync, which the stale alerts
// judge it by (a paused account, or one on a 2-hourly schedule, must not
// page as if it were on the default's).
func TestAccountScheduleSeries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 6)
	river := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	stores := map[string]*warehouse.Store{}
	for _, name := range []string{DefaultAccount, "eu", "ap"} {
		stores[name] = migratedStore(t, pool)
	}
	synced := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	if _, err := pool.Exec(ctx, `INSERT INTO `+schema.QuoteIdentifier(stores["eu"].Schema())+`.sync_runs
		(kind, status, started_at, finished_at) VALUES ('incremental', 'succeeded', $1, $1), ('reconcile', 'succeeded', $2, $2)`,
		synced, synced.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	list := func(context.Context, pgx.Tx) ([]Registered, error) {
		return []Registered{{Name: DefaultAccount, Env: true, Store: stores[DefaultAccount], SyncInterval: 20 * time.Second},
			{Name: "eu", Store: stores["eu"], SyncInterval: 2 * time.Hour},
			{Name: "ap", Store: stores["ap"], Paused: true, SyncInterval: 5 * time.Minute}}, nil
	}
	m := NewMetrics(MetricsConfig{Pool: pool, Store: stores[DefaultAccount], Schema: "fleet", RiverSchema: river,
		Accounts: list, Logger: slog.New(slog.DiscardHandler)})
	got := gatherByAccount(t, m)
	want := map[string]map[string]float64{
		"usersync_account_paused":        {DefaultAccount: 0, "eu": 0, "ap": 1},
		"usersync_sync_interval_seconds": {DefaultAccount: 20, "eu": 7200, "ap": 300},
		// A reconcile's end is not a sync's: eu's last success is its incremental run.
		"usersync_sync_last_success_timestamp_seconds": {"eu": float64(synced.Unix())},
	}
	for metric, accounts := range want {
		if len(got[metric]) != len(accounts) {
			t.Errorf("%s = %v, want %v", metric, got[metric], accounts)
			continue
		}
		for account, v := range accounts {
			if g, ok := got[metric][account]; !ok || g != v {
				t.Errorf("%s{account=%q} = %v (present %v), want %v", metric, account, g, ok, v)
			}
		}
	}
}

// gatherByAccount scrapes m and returns each gauge's value by metric and
// account.
func gatherByAccount(t *testing.T, m *Metrics) map[string]map[string]float64 {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "account" {
					if got[mf.GetName()] == nil {
						got[mf.GetName()] = map[string]float64{}
					}
					got[mf.GetName()][l.GetValue()] = s.GetGauge().GetValue()
				}
			}
		}
	}
	return got
}

// migratedStore migrates a fresh schema of the warehouse and returns its
// store.
func migratedStore(t *testing.T, pool *pgxpool.Pool) *warehouse.Store {
	t.Helper()
	name := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatal(err)
	}
	s, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
