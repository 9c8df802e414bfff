package fleet

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// TestClosedAccountKeepsItsQuietHint: an account the cache's bound closes
// is opened again with its last no-op run's hint, so that its next no-op
// sync is still the one statement.
func TestClosedAccountKeepsItsQuietHint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	reg, envSchema, river := newRegistry(t, pool)
	srv := httptest.NewServer(apisim.New(apisim.Options{Seed: 3, Users: 50}))
	t.Cleanup(srv.Close)
	builds, mu := map[string]int{}, &sync.Mutex{}
	open := func(name, schemaName string) Spec {
		return Spec{Name: name, Schema: schemaName, Open: func(_ context.Context, store *warehouse.Store) (*jobs.Account, *jsonapi.Client, error) {
			mu.Lock()
			builds[name]++
			mu.Unlock()
			client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("test-token")})
			if err != nil {
				return nil, nil, err
			}
			s, err := syncer.New(client, store, syncer.Config{})
			return &jobs.Account{Name: name, Store: store, Syncer: s}, client, err
		}}
	}
	f, err := New(Config{Pool: pool, RiverSchema: river, Cache: 1, Env: open(jobs.DefaultAccount, envSchema),
		Resolve: func(_ context.Context, a accounts.Account) (Spec, error) {
			return open(a.Name, a.Settings[accounts.SchemaSetting]), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	schemaA := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: schemaA}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add(ctx, accounts.Account{Name: "a", Settings: map[string]string{accounts.SchemaSetting: schemaA}}); err != nil {
		t.Fatal(err)
	}
	a, err := f.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{warehouse.KindFull, warehouse.KindIncremental} {
		if _, err := a.Syncer.Run(ctx, syncer.Request{Kind: kind}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Open(ctx, jobs.DefaultAccount); err != nil { // closes a: the cache holds one
		t.Fatal(err)
	}
	if f.Opened("a") != nil {
		t.Fatal("a is still open beyond the cache's bound")
	}
	again, err := f.Open(ctx, "a")
	if err != nil || again == a || builds["a"] != 2 {
		t.Fatalf("a opened again: built %d times, %v", builds["a"], err)
	}
	if _, ok := again.Syncer.Quiet(ctx, syncer.Request{Kind: warehouse.KindIncremental, Guard: again.Guard}); !ok {
		t.Error("a, opened again, lost its last no-op run's hint: its no-op sync ran in full")
	}
}
