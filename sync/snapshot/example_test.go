package snapshot_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// Example syncs a simulated account into a fresh schema and writes its
// Parquet snapshot to a local folder: one manifest listing every table.
func Example() {
	ctx := context.Background()
	pool, name, drop, err := schematest.OpenExample(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	if err := syncSimulated(ctx, pool, name); err != nil {
		fmt.Println(err)
		return
	}

	dir, err := os.MkdirTemp("", "usersync-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	dest, err := snapshot.NewLocal(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := snapshot.New(pool, name, dest, nil, nil, snapshot.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := w.Write(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, table := range []string{"users", "teams", "user_teams"} {
		t, _ := m.Table(table)
		fmt.Printf("%s: %d rows in %d file(s)\n", t.Name, t.Rows, len(t.Files))
	}
	// The stable path shows the newest snapshot, for DuckDB or dbt.
	current, err := filepath.Glob(filepath.Join(dir, name, "users", "current", "*.parquet"))
	fmt.Println(len(current), "file(s) under users/current", err)
	// Output:
	// users: 60 rows in 1 file(s)
	// teams: 3 rows in 1 file(s)
	// user_teams: 81 rows in 1 file(s)
	// 1 file(s) under users/current <nil>
}

// syncSimulated runs one full sync of 60 simulated users into schema name.
func syncSimulated(ctx context.Context, pool *pgxpool.Pool, name string) error {
	srv := httptest.NewServer(apisim.New(apisim.Options{Seed: 3, Users: 60}))
	defer srv.Close()
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("example-token"), UserAgent: "usersync-example"})
	if err != nil {
		return err
	}
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		return err
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		return err
	}
	s, err := syncer.New(client, store, syncer.Config{})
	if err != nil {
		return err
	}
	_, err = s.Run(ctx, syncer.Request{Kind: warehouse.KindFull})
	return err
}
