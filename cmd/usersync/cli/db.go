package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/warehouse"
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
		return fmt.Errorf("connecting to the database (DATABASE_URL %s): %s", redactDSN(e.cfg.DatabaseURL), redactErr(err, e.cfg.DatabaseURL))
	}
	return nil
}

// newPool parses DATABASE_URL and opens a pool, which connects only when
// used: a database that does not answer yet is no error here.
func newPool(ctx context.Context, e *env, maxConns int32) (*pgxpool.Pool, error) {
	if err := e.cfg.RequireDatabase(); err != nil {
		return nil, usageError{err}
	}
	pcfg, err := pgxpool.ParseConfig(e.cfg.DatabaseURL)
	if err != nil {
		return nil, usageError{fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL: %s", redactErr(errors.New(parseErrorText(err)), e.cfg.DatabaseURL))}
	}
	if isURLDSN(e.cfg.DatabaseURL) && hostHoldsAt(&pcfg.ConnConfig.Config) {
		return nil, usageError{errors.New("DATABASE_URL's user or password holds a raw '@', which the driver takes for the end of the password (the rest would be printed as the host): percent-encode it as %40")}
	}
	if host := plaintextHost(&pcfg.ConnConfig.Config); host != "" {
		e.logger.WarnContext(ctx, "DATABASE_URL lets the connection to a remote host go unencrypted (no sslmode, or disable, allow or prefer); set sslmode=verify-full (or require)",
			"host", host)
	}
	if maxConns > 0 {
		pcfg.MaxConns = maxConns
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "usersync"
	if e.cfg.LockTimeout > 0 {
		// Every statement waits at most this long for a lock another session
		// holds: a run fails and resumes rather than hang behind it.
		pcfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(e.cfg.LockTimeout.Milliseconds(), 10)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("opening the database pool: %w", err)
	}
	return pool, nil
}

// plaintextHost returns the first host that is not on this machine (a
// loopback address or a Unix socket's folder) and that the driver may talk
// to without TLS, or "". pgx's default sslmode, prefer, falls back to
// plaintext silently, as do allow and disable.
func plaintextHost(cfg *pgconn.Config) string {
	attempts := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	for _, a := range attempts {
		if a.TLSConfig == nil && !strings.HasPrefix(a.Host, "/") && !config.IsLoopback(a.Host) {
			return a.Host
		}
	}
	return ""
}

// hostHoldsAt says whether a host the driver read holds an '@': in a URL
// that is the tail of a password with a raw '@', never a real host name.
func hostHoldsAt(cfg *pgconn.Config) bool {
	if strings.Contains(cfg.Host, "@") {
		return true
	}
	return slices.ContainsFunc(cfg.Fallbacks, func(f *pgconn.FallbackConfig) bool { return strings.Contains(f.Host, "@") })
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
