package jobs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverSchema is the schema River's tables live in for a warehouse schema:
// its own schema beside the warehouse, so analysts' grants never reach it and
// an operator can tell the two apart at a glance.
func RiverSchema(warehouseSchema string) string { return warehouseSchema + "_river" }

// MigrateRiver creates River's schema, applies River's migrations to it and
// makes usersync's index of River's jobs by account (createAccountIndex).
// River's migrator takes no lock, so callers hold the migration lock
// (warehouse.WithMigrationLock). It returns the versions applied.
func MigrateRiver(ctx context.Context, pool *pgxpool.Pool, riverSchema string, logger *slog.Logger) ([]int, error) {
	q, err := newStatements(riverSchema)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, q.createSchema); err != nil {
		return nil, fmt.Errorf("creating schema %s: %w", riverSchema, err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: riverSchema, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("preparing River migrations: %w", err)
	}
	res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("applying River migrations: %w", err)
	}
	if _, err := pool.Exec(ctx, q.createAccountIndex); err != nil {
		return nil, fmt.Errorf("indexing the jobs by account: %w", err)
	}
	out := make([]int, 0, len(res.Versions))
	for _, v := range res.Versions {
		out = append(out, v.Version)
	}
	return out, nil
}

// RiverMigrationsCurrent reports whether River's schema has every migration
// this binary knows.
func RiverMigrationsCurrent(ctx context.Context, pool *pgxpool.Pool, riverSchema string) (bool, error) {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: riverSchema})
	if err != nil {
		return false, fmt.Errorf("preparing River migrations: %w", err)
	}
	res, err := m.Validate(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("checking River migrations: %w", err)
	}
	return res.OK, nil
}
