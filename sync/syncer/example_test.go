package syncer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// Example runs a full sync of a simulated account into a fresh schema, then,
// after five users change, an incremental one that fetches them again (and
// the user at the watermark, which the lookback covers).
func Example() {
	ctx := context.Background()
	sim := apisim.New(apisim.Options{Seed: 7, Users: 120})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	client, err := jsonapi.NewClient(jsonapi.Options{
		BaseURL:   srv.URL,
		Auth:      jsonapi.StaticToken("example-token"),
		UserAgent: "usersync-example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool, name, drop, err := schematest.OpenExample(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		fmt.Println(err)
		return
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := syncer.New(client, store, syncer.Config{PageSize: 50, Lookback: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kind := range []string{warehouse.KindFull, warehouse.KindIncremental} {
		if kind == warehouse.KindIncremental {
			sim.UpdateUsers(5)
		}
		sum, err := s.Run(ctx, syncer.Request{Kind: kind})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d users fetched, %d inserted, %d updated, %d unchanged\n",
			sum.Kind, sum.Fetched, sum.Inserted, sum.Updated, sum.Unchanged)
	}
	// Output:
	// full: 120 users fetched, 120 inserted, 0 updated, 0 unchanged
	// incremental: 6 users fetched, 0 inserted, 5 updated, 1 unchanged
}
