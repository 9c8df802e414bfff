package warehouse

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// migrationLockKey is the advisory lock every migrating process takes, so two
// `usersync migrate` runs (or replicas starting at once) never interleave.
const migrationLockKey = "usersync:migrate"

// MigrateOptions configures Migrate.
type MigrateOptions struct {
	Schema     string // warehouse schema, e.g. "usersync"
	ReaderRole string // analysts' read-only role; "" skips role handling
}

// ErrReaderRoleIsMigrator refuses a reader role that is the migrating user or
// a role it belongs to: the grants revoke the reader's access to the
// bookkeeping tables (oauth_tokens, schema_migrations), which would take the
// migrating user's own access away and lock the next migrate out.
var ErrReaderRoleIsMigrator = errors.New("the reader role is the migrating user or a role it belongs to")

// MigrateResult says what a Migrate call did.
type MigrateResult struct {
	Applied []string // names of the migrations applied by this call
	Current int      // the newest version now applied
	Notices []string // things the operator should know (e.g. the role could not be created)
}

// WithMigrationLock runs fn while holding the migration advisory lock on a
// dedicated connection, waiting for any other migrator to finish first (by
// polling, so that neither lock_timeout nor a stuck migrator ends the wait
// but ctx does).
func WithMigrationLock(ctx context.Context, pool *pgxpool.Pool, fn func(ctx context.Context) error) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquiring a connection for the migration lock: %w", err)
	}
	defer conn.Release()
	q, err := newLockSQL()
	if err != nil {
		return err
	}
	if err := waitLock(ctx, conn.Conn(), q.tryLock, migrationLockKey); err != nil {
		return fmt.Errorf("taking the migration lock: %w", err)
	}
	defer func() {
		// Unlock on the same connection, or the lock would stay on the pooled session.
		_, uerr := conn.Exec(context.WithoutCancel(ctx), q.unlock, migrationLockKey)
		if uerr != nil && err == nil {
			err = fmt.Errorf("releasing the migration lock: %w", uerr)
		}
	}()
	return fn(ctx)
}

// Migrate creates the schema if needed, applies every pending versioned
// migration (each in its own transaction), refreshes the comments from the
// catalog and grants the analysts' role read access. It is idempotent. Call
// it inside WithMigrationLock when other processes may migrate at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts MigrateOptions) (MigrateResult, error) {
	var res MigrateResult
	migrations, err := schema.Migrations(opts.Schema)
	if err != nil {
		return res, fmt.Errorf("loading migrations: %w", err)
	}
	q, err := newMigrateSQL(opts.Schema)
	if err != nil {
		return res, err
	}
	if opts.ReaderRole != "" {
		if err := checkReaderRole(ctx, pool, q, opts.ReaderRole); err != nil {
			return res, err
		}
	}
	if _, err := pool.Exec(ctx, q.createSchema); err != nil {
		return res, fmt.Errorf("creating schema %s: %w", opts.Schema, err)
	}
	if _, err := pool.Exec(ctx, q.createMigrations); err != nil {
		return res, fmt.Errorf("creating the migrations table: %w", err)
	}
	applied, err := appliedVersions(ctx, pool, q)
	if err != nil {
		return res, err
	}
	for _, m := range migrations {
		if applied[m.Version] {
			res.Current = m.Version
			continue
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, q.recordMigration, m.Version, m.Name)
			return err
		})
		if err != nil {
			return res, fmt.Errorf("applying migration %s: %w", m.Name, err)
		}
		res.Applied = append(res.Applied, m.Name)
		res.Current = m.Version
	}
	if err := pgrow.FinishRehash(ctx, pool, opts.Schema); err != nil {
		return res, err
	}
	if _, err := pool.Exec(ctx, q.comments()); err != nil {
		return res, fmt.Errorf("commenting tables: %w", err)
	}
	if opts.ReaderRole != "" {
		notice, err := grantReader(ctx, pool, q, opts.ReaderRole)
		if err != nil {
			return res, err
		}
		if notice != "" {
			res.Notices = append(res.Notices, notice)
		}
	}
	return res, nil
}

func appliedVersions(ctx context.Context, db DBTX, q migrateSQL) (map[int]bool, error) {
	rows, err := db.Query(ctx, q.appliedVersions)
	if err != nil {
		return nil, fmt.Errorf("reading applied migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("reading applied migrations: %w", err)
	}
	out := make(map[int]bool, len(versions))
	for _, v := range versions {
		out[v] = true
	}
	return out, nil
}

// MigrationStatus reports the newest applied migration and the newest this
// binary knows. A missing schema reads as version 0.
func MigrationStatus(ctx context.Context, db DBTX, schemaName string) (applied, latest int, err error) {
	migrations, err := schema.Migrations(schemaName)
	if err != nil {
		return 0, 0, err
	}
	latest = migrations[len(migrations)-1].Version
	q, err := newMigrateSQL(schemaName)
	if err != nil {
		return 0, latest, err
	}
	var exists bool
	if err := db.QueryRow(ctx, q.migrationsExist, schemaName+".schema_migrations").Scan(&exists); err != nil {
		return 0, latest, fmt.Errorf("checking migrations: %w", err)
	}
	if !exists {
		return 0, latest, nil
	}
	err = db.QueryRow(ctx, q.latestApplied).Scan(&applied)
	if err != nil {
		return 0, latest, fmt.Errorf("checking migrations: %w", err)
	}
	return applied, latest, nil
}

// checkReaderRole refuses a reader role the current user is, or is a member
// of, directly or through other roles.
func checkReaderRole(ctx context.Context, pool *pgxpool.Pool, q migrateSQL, role string) error {
	var mine bool
	err := pool.QueryRow(ctx, q.readerIsMigrator, role).Scan(&mine)
	if err != nil {
		return fmt.Errorf("checking reader role %s: %w", role, err)
	}
	if mine {
		return fmt.Errorf("reader role %s: %w", role, ErrReaderRoleIsMigrator)
	}
	return nil
}

// grantReader makes role able to read the analysts' tables and nothing else.
// It creates the role only when it is missing and the current user may create
// roles; otherwise it returns a notice for the operator.
func grantReader(ctx context.Context, pool *pgxpool.Pool, q migrateSQL, role string) (string, error) {
	if err := schema.ValidateIdentifier(role); err != nil {
		return "", fmt.Errorf("reader role: %w", err)
	}
	var exists, canCreate bool
	err := pool.QueryRow(ctx, q.readerRole, role).Scan(&exists, &canCreate)
	if err != nil {
		return "", fmt.Errorf("checking reader role %s: %w", role, err)
	}
	if !exists {
		if !canCreate {
			return fmt.Sprintf("reader role %s does not exist and the migrating user may not create roles; create it (CREATE ROLE %s NOLOGIN) and run migrate again to grant it read access", role, role), nil
		}
		_, err := pool.Exec(ctx, sqlfile.Fill(q.createReader, map[string]string{"role": schema.QuoteIdentifier(role)}))
		if err != nil {
			return "", fmt.Errorf("creating reader role %s: %w", role, err)
		}
	}
	if _, err := pool.Exec(ctx, q.grants(role)); err != nil {
		var nerr interface{ SQLState() string }
		if errors.As(err, &nerr) && nerr.SQLState() == "42501" {
			return fmt.Sprintf("the migrating user may not grant read access to %s: %v", role, err), nil
		}
		return "", fmt.Errorf("granting %s read access: %w", role, err)
	}
	return "", nil
}

// ReaderAccess says whether role exists and, when it does, which of the
// analysts' tables of schemaName it may not read (none when migrate's
// grants are in place): what usersync check reports.
func ReaderAccess(ctx context.Context, pool *pgxpool.Pool, schemaName, role string) (exists bool, missing []string, err error) {
	q, err := newMigrateSQL(schemaName)
	if err != nil {
		return false, nil, err
	}
	var canCreate bool
	if err := pool.QueryRow(ctx, q.readerRole, role).Scan(&exists, &canCreate); err != nil {
		return false, nil, fmt.Errorf("reading roles: %w", err)
	}
	if !exists {
		return false, nil, nil
	}
	var tables []string
	for _, t := range schema.Tables() {
		if t.Analysts {
			tables = append(tables, t.Name)
		}
	}
	if err := pool.QueryRow(ctx, q.readerMissing, role, schemaName, tables).Scan(&missing); err != nil {
		return true, nil, fmt.Errorf("reading the grants of %s: %w", role, err)
	}
	return true, missing, nil
}
