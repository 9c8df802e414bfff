package schematest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenExample opens a pool on DATABASE_URL and names a fresh schema for a
// package's runnable Example, which has no testing.T to clean up after it:
// the caller defers drop, which removes the schema (and its River schema)
// and closes the pool.
func OpenExample(ctx context.Context) (pool *pgxpool.Pool, name string, drop func(), err error) {
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		return nil, "", nil, errors.New("DATABASE_URL is not set: run the examples with `make test`")
	}
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, "", nil, fmt.Errorf("parsing DATABASE_URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("opening pool: %w", err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		pool.Close()
		return nil, "", nil, fmt.Errorf("naming the example schema: %w", err)
	}
	name = "t_" + hex.EncodeToString(b[:])
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`", "`+name+`_river" CASCADE`); err != nil {
			fmt.Fprintf(os.Stderr, "dropping example schema %s: %v\n", name, err)
		}
		pool.Close()
	}
	return pool, name, drop, nil
}
