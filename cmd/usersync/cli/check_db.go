package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/warehouse"
)

// The fixes of the database checks, shared by usersync check and the
// worker's wait for its database.
const (
	fixDatabase   = "check that PostgreSQL runs and accepts connections from this host, and DATABASE_URL's host, port, user and password"
	fixMigrations = "run usersync migrate (with this version and USERSYNC_SCHEMA) and let it finish"
	fixWrites     = "the database is read-only (a standby, default_transaction_read_only), its disk is full, or DATABASE_URL's user lost its grants on the schema: docs/operations.md#usersyncdatabaserefuseswrites"
)

// databaseReachable returns nil when the database answers, else why not.
func databaseReachable(ctx context.Context, e *env, store *warehouse.Store) *notReady {
	if err := pingPool(ctx, e, store.Pool()); err != nil {
		return &notReady{err: err, public: "database unreachable", check: fixDatabase}
	}
	return nil
}

// migrationsCurrent returns nil when the warehouse schema and the job
// queue's are migrated to this version, else why not.
func migrationsCurrent(ctx context.Context, store *warehouse.Store, riverSchema string) *notReady {
	applied, latest, err := warehouse.MigrationStatus(ctx, store.Pool(), store.Schema())
	if err != nil {
		return &notReady{err: err,
			public: "reading migrations", check: "check that DATABASE_URL's user may read schema " + store.Schema()}
	}
	if applied < latest {
		err := fmt.Errorf("schema %s is at migration %d of %d: run usersync migrate first", store.Schema(), applied, latest)
		return &notReady{err: err, public: err.Error(), check: fixMigrations}
	}
	if ok, err := jobs.RiverMigrationsCurrent(ctx, store.Pool(), riverSchema); err != nil || !ok {
		err := fmt.Errorf("job queue schema %s is not migrated: run usersync migrate first", riverSchema)
		return &notReady{err: err, public: err.Error(), check: fixMigrations}
	}
	return nil
}

// writesTaken returns nil when the warehouse takes writes, else why not.
func writesTaken(ctx context.Context, store *warehouse.Store) *notReady {
	err := store.Writable(ctx)
	if errors.Is(err, warehouse.ErrWritesRefused) {
		return &notReady{err: err, public: err.Error(), check: fixWrites}
	}
	return nil // another error is the database's, which the other checks name
}

// checkDatabase is the database, migrations and writes checks, in
// databaseReachable's, migrationsCurrent's and writesTaken's words.
func (c *checker) checkDatabase(ctx context.Context) {
	if nr := databaseReachable(ctx, c.e, c.store); nr != nil {
		c.fail("database", oneLine(nr.err.Error()), nr.check)
		return
	}
	c.pass("database", "answers, as "+redactDSN(c.e.cfg.DatabaseURL))
	c.dbOK = true
	if nr := migrationsCurrent(ctx, c.store, c.e.riverSchema()); nr != nil {
		c.fail("migrations", oneLine(nr.err.Error()), nr.check)
		return
	}
	c.pass("migrations", fmt.Sprintf("schemas %s and %s are current", c.store.Schema(), c.e.riverSchema()))
	c.migrated = true
	if nr := writesTaken(ctx, c.store); nr != nil {
		c.fail("writes", oneLine(nr.err.Error()), nr.check)
		return
	}
	c.pass("writes", "schema "+c.store.Schema()+" takes writes")
}

// checkReaderRole checks that USERSYNC_READER_ROLE exists and may read every
// analysts' table, as usersync migrate grants it, and that no other role
// may read a table of the schema.
func (c *checker) checkReaderRole(ctx context.Context) {
	role := c.e.cfg.ReaderRole
	if role == "" {
		c.pass("reader role", "none (USERSYNC_READER_ROLE is empty)")
		return
	}
	if !c.migrated {
		c.notChecked("reader role", "migrations")
		return
	}
	exists, missing, err := warehouse.ReaderAccess(ctx, c.store.Pool(), c.store.Schema(), role)
	if err != nil {
		c.fail("reader role", oneLine(err.Error()), fixDatabase)
		return
	}
	if !exists {
		c.fail("reader role", fmt.Sprintf("role %s (USERSYNC_READER_ROLE) does not exist", role),
			fmt.Sprintf("create it (CREATE ROLE %s NOLOGIN) and run usersync migrate to grant it read access, or set USERSYNC_READER_ROLE to an existing role (empty for none)", role))
		return
	}
	if len(missing) > 0 {
		c.fail("reader role", fmt.Sprintf("role %s may not read %s.%s", role, c.store.Schema(), strings.Join(missing, ", ")),
			"run usersync migrate as a user that may grant on the schema: it grants USERSYNC_READER_ROLE read access")
		return
	}
	detail, fix, err := c.otherReaders(ctx, role)
	switch {
	case err != nil:
		c.fail("reader role", oneLine(err.Error()), fixDatabase)
	case detail != "":
		c.fail("reader role", detail, fix)
	default:
		c.pass("reader role", fmt.Sprintf("%s may read the analysts' tables of %s, and no other role", role, c.store.Schema()))
	}
}
