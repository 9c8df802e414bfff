package warehouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrWritesRefused is a warehouse that answers but takes no writes: a
// read-only database or standby, or a role that lost its UPDATE grant. No
// run can commit; the worker waits and /readyz says so.
var ErrWritesRefused = errors.New("the database refuses writes")

// refusals are the SQLSTATEs of a database that refuses writes: a read-only
// transaction, a missing privilege, a full disk.
var refusals = map[string]string{
	"25006": "read-only",
	"42501": "permission denied",
	"53100": "disk full",
}

// WritesRefused says whether err is PostgreSQL refusing a write, and why
// (the refusal's kind and PostgreSQL's message, which names no host or user).
func WritesRefused(err error) (string, bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return "", false
	}
	why, ok := refusals[pe.Code]
	return why + ": " + pe.Message, ok
}

// probeLockTimeout bounds the probe's wait for sync_runs' lock: a table
// locked by another session is a lock wait (LockWait), not a refusal.
const probeLockTimeout = "200ms"

// Writable checks, without writing, that the warehouse takes writes; an
// error that is ErrWritesRefused says why not, any other error is the
// database's. A probe that finds sync_runs locked by another session
// returns nil: it cannot tell, and a lock is not a refusal.
func (s *Store) Writable(ctx context.Context) error {
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL lock_timeout = '" + probeLockTimeout + "'"},
		func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, s.runs.sql.writeProbe)
			return err
		})
	var pe *pgconn.PgError
	switch {
	case err == nil, errors.As(err, &pe) && pe.Code == "55P03": // lock_not_available
		return nil
	}
	if why, ok := WritesRefused(err); ok {
		return fmt.Errorf("%w (%s)", ErrWritesRefused, why)
	}
	return fmt.Errorf("probing whether schema %s takes writes: %w", s.schema, err)
}

// LockWait is how long the longest-waiting statement of usersync's sessions
// has waited for a lock another session holds; 0 when none waits.
func (s *Store) LockWait(ctx context.Context) (time.Duration, error) {
	var secs float64
	if err := s.pool.QueryRow(ctx, s.locks.lockWait).Scan(&secs); err != nil {
		return 0, fmt.Errorf("reading lock waits: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
