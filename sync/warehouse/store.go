package warehouse

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
)

// Store reads and writes one warehouse schema.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	q      string // the quoted schema name, for statements
	runs   Runs
	locks  lockSQL
}

// NewStore returns a Store for the warehouse in schemaName.
func NewStore(pool *pgxpool.Pool, schemaName string) (*Store, error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, schema: schemaName, q: schema.QuoteIdentifier(schemaName)}
	var err error
	if s.runs.sql, err = newRunSQL(schemaName); err != nil {
		return nil, err
	}
	if s.locks, err = newLockSQL(); err != nil {
		return nil, err
	}
	s.runs.pool, s.runs.lockKey = pool, s.lockKey()
	return s, nil
}

// Schema returns the warehouse schema's name.
func (s *Store) Schema() string { return s.schema }

// Pool returns the store's pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Runs is the run bookkeeping of the Store's schema (sync_runs).
func (s *Store) Runs() *Runs { return &s.runs }

// DBTX is what the warehouse packages need from a pool, a connection or a
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
