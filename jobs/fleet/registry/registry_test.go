package registry_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// TestAddListRemove: an account added through the registry gets a migrated
// schema of its own and its token stored sealed, is listed with its token
// opened, is refused a second time, and its removal with its data drops its
// schema.
func TestAddListRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+name+`_acme" CASCADE`) })
	env := map[string]string{"USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "", "USERSYNC_SNAPSHOT_DIR": "off",
		"USERSYNC_SECRETS_KEY": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}
	fleet, err := config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+name+`_river"`); err != nil {
		t.Fatal(err)
	}
	f, err := registry.New(pool, fleet, func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{"USERSYNC_API_URL": "https://api.example.com", accounts.SchemaSetting: name + "_acme", "USERSYNC_API_TOKEN": "tok-s3cr3t"}
	cfg, sealed, err := f.Check("acme", vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sealed["USERSYNC_API_TOKEN"] == "tok-s3cr3t" || cfg.APIToken != "tok-s3cr3t" {
		t.Errorf("stored token %q, Config's %q: want it sealed in the row, opened in the Config", sealed["USERSYNC_API_TOKEN"], cfg.APIToken)
	}
	a := accounts.Account{Name: "acme", Settings: sealed}
	if res, err := f.Add(ctx, a, cfg, true); err != nil || res.Current == 0 {
		t.Fatalf("adding: migration %d, %v", res.Current, err)
	}
	var ie registry.InputError
	if _, err := f.Add(ctx, a, cfg, true); !errors.As(err, &ie) {
		t.Errorf("adding it again: %v; want an InputError", err)
	}
	list, err := f.List(ctx)
	if err != nil || len(list) != 2 || list[1].Name != "acme" || list[1].Err != nil || list[1].Cfg.APIToken != "tok-s3cr3t" {
		t.Fatalf("listed %+v, %v", list, err)
	}
	if err := f.CheckDrop(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Remove(ctx, a, true, false); err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, name+"_acme").Scan(&exists); err != nil || exists {
		t.Errorf("schema %s_acme exists after its removal with its data: %v", name, err)
	}
}
