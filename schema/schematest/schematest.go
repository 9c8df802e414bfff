package schematest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DatabaseURL returns DATABASE_URL, failing the test (never skipping it) with
// instructions when it is unset.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Fatal("DATABASE_URL is not set: run the tests with `make test`, which starts a throwaway PostgreSQL, " +
			"or export DATABASE_URL=$(deploy/dev/postgres.sh up)")
	}
	return u
}

// NewPool opens a pool on the test database whose search_path is empty, so a
// statement that forgot to qualify a table with its schema fails loudly.
func NewPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(DatabaseURL(t))
	if err != nil {
		t.Fatalf("parsing DATABASE_URL: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	cfg.ConnConfig.RuntimeParams["jit"] = "off" // as usersync's own sessions (config.PoolConfig)
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("opening pool: %v", err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("connecting to DATABASE_URL: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewSchemaName returns a unique schema name for a test and drops that schema
// (and its River schema, <name>_river) when the test ends. It does not create
// it: migrations do.
func NewSchemaName(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "t_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// One statement drops both: one transaction and one commit instead of two.
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`", "`+name+`_river" CASCADE`); err != nil {
			t.Errorf("dropping test schema %s: %v", name, err)
		}
	})
	return name
}

// AcquiredConns returns the connections of pool still acquired, once those
// being destroyed (a connection a cancelled context broke is closed in the
// background) are gone, waiting a few seconds at most: a test that expects
// no connection leaked checks it is 0.
func AcquiredConns(pool *pgxpool.Pool) int32 {
	for range 100 {
		if n := pool.Stat().AcquiredConns(); n == 0 {
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	return pool.Stat().AcquiredConns()
}
