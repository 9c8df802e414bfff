package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestSlowAccountKeepsOthersSeries: an account whose tables are locked
// (slow) and one whose schema is gone (broken) cost their own series only:
// every other account's gauges are in the scrape, each account's
// usersync_account_scrape_up says whether it was read, and the scrape ends
// within its bound (#41: one slow account blanked the others').
func TestSlowAccountKeepsOthersSeries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 10)
	river := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	store := func() *warehouse.Store {
		name := schematest.NewSchemaName(t, pool)
		if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
			t.Fatal(err)
		}
		s, err := warehouse.NewStore(pool, name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	def, slow, good, late := store(), store(), store(), store()
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
	list := func(context.Context) ([]Registered, error) {
		return []Registered{{Name: "slow", Store: slow, Snapshots: true}, {Name: "broken", Store: broken},
			{Name: "good", Store: good, Snapshots: true}, {Name: "late", Store: late}}, nil
	}
	m := NewMetrics(MetricsConfig{Pool: pool, Store: def, Schema: "fleet", RiverSchema: river, Snapshots: true, Accounts: list,
		Logger: slog.New(slog.DiscardHandler)})

	began := time.Now()
	mfs, err := m.reg.Gather()
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{} // metric, account: value
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
