package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/dsn"
)

// openPool parses DATABASE_URL, opens a pool and checks the database answers.
// Errors name the setting and never carry the password.
func openPool(ctx context.Context, e *env, maxConns int32) (*pgxpool.Pool, error) {
	pool, err := newPool(ctx, e, maxConns)
	if err != nil {
		return nil, err
	}
	if err := pingPool(ctx, e, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// pingPool checks the database answers, within 15 seconds. The error never
// carries the password.
func pingPool(ctx context.Context, e *env, pool *pgxpool.Pool) error {
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		return fmt.Errorf("connecting to the database (DATABASE_URL %s): %s", dsn.Redact(e.cfg.DatabaseURL), dsn.RedactErr(err, e.cfg.DatabaseURL))
	}
	return nil
}

// newPool parses DATABASE_URL and opens a pool, which connects only when
// used: a database that does not answer yet is no error here.
func newPool(ctx context.Context, e *env, maxConns int32) (*pgxpool.Pool, error) {
	pcfg, host, err := e.cfg.PoolConfig(maxConns)
	if err != nil {
		return nil, usageError{err}
	}
	if host != "" {
		e.logger.WarnContext(ctx, "DATABASE_URL lets the connection to a remote host go unencrypted (no sslmode, or disable, allow or prefer); set sslmode=verify-full (or require)",
			"host", host)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the database pool: %w", err)
	}
	return pool, nil
}

// openStore opens the database and the warehouse store of the configured
// schema, and checks the schema is migrated. Close the pool when done.
func openStore(ctx context.Context, e *env, maxConns int32) (*pgxpool.Pool, *warehouse.Store, error) {
	pool, err := openPool(ctx, e, maxConns)
	if err != nil {
		return nil, nil, err
	}
	store, err := warehouse.NewStore(pool, e.cfg.Schema)
	if err != nil {
		pool.Close()
		return nil, nil, usageError{err}
	}
	if err := requireMigrated(ctx, store); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, store, nil
}
