package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/warehouse/dsn"
)

// PoolConfig is DATABASE_URL parsed for a pool of at most maxConns
// connections (0: the driver's default), named usersync, without JIT
// compilation unless DATABASE_URL sets jit, whose statements
// wait at most USERSYNC_LOCK_TIMEOUT for a lock another session holds; a
// pool made of it connects only when used. plaintext is the first remote
// host the driver may talk to without TLS, or "". Errors are one line
// naming DATABASE_URL and never carry the password.
func (c Config) PoolConfig(maxConns int32) (pcfg *pgxpool.Config, plaintext string, err error) {
	if err := c.RequireDatabase(); err != nil {
		return nil, "", err
	}
	pcfg, err = pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return nil, "", fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL: %s", dsn.RedactErr(errors.New(dsn.ParseErrorText(err)), c.DatabaseURL))
	}
	if dsn.IsURL(c.DatabaseURL) && hostHoldsAt(&pcfg.ConnConfig.Config) {
		return nil, "", errors.New("DATABASE_URL's user or password holds a raw '@', which the driver takes for the end of the password (the rest would be printed as the host): percent-encode it as %40")
	}
	if maxConns > 0 {
		pcfg.MaxConns = maxConns
	}
	pcfg.ConnConfig.RuntimeParams["application_name"] = "usersync"
	if _, set := pcfg.ConnConfig.RuntimeParams["jit"]; !set {
		// usersync's statements are short, and the planner's guesses over the
		// views' unnested arrays are large: compiling one costs up to a second.
		pcfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if c.LockTimeout > 0 {
		// Every statement waits at most this long for a lock another session
		// holds: a run fails and resumes rather than hang behind it.
		pcfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(c.LockTimeout.Milliseconds(), 10)
	}
	return pcfg, plaintextHost(&pcfg.ConnConfig.Config), nil
}

// plaintextHost returns the first host that is not on this machine (a
// loopback address or a Unix socket's folder) and that the driver may talk
// to without TLS, or "". pgx's default sslmode, prefer, falls back to
// plaintext silently, as do allow and disable.
func plaintextHost(cfg *pgconn.Config) string {
	attempts := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	for _, a := range attempts {
		if a.TLSConfig == nil && !strings.HasPrefix(a.Host, "/") && !IsLoopback(a.Host) {
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
