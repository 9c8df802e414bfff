package check

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/warehouse"
)

// Problem is why the database is not ready: the error (for a log), a
// public line (for /readyz: no host or user) and what to check.
type Problem struct {
	Err    error
	Public string
	Check  string
}

// The fixes of the database checks, shared by usersync check and the
// worker's wait for its database.
const (
	fixDatabase   = "check that PostgreSQL runs and accepts connections from this host, and DATABASE_URL's host, port, user and password"
	fixMigrations = "run usersync migrate (with this version and USERSYNC_SCHEMA) and let it finish"
	fixWrites     = "the database is read-only (a standby, default_transaction_read_only), its disk is full, or DATABASE_URL's user lost its grants on the schema: docs/operations.md#usersyncdatabaserefuseswrites"
)

// DatabaseReachable returns nil when ping finds the database answers,
// else why not.
func DatabaseReachable(ctx context.Context, ping func(context.Context) error) *Problem {
	if err := ping(ctx); err != nil {
		return &Problem{Err: err, Public: "database unreachable", Check: fixDatabase}
	}
	return nil
}

// MigrationsCurrent returns nil when the warehouse schema and the job
// queue's are migrated to this version, else why not.
func MigrationsCurrent(ctx context.Context, store *warehouse.Store, riverSchema string) *Problem {
	applied, latest, err := warehouse.MigrationStatus(ctx, store.Pool(), store.Schema())
	if err != nil {
		return &Problem{Err: err, Public: "reading migrations", Check: "check that DATABASE_URL's user may read schema " + store.Schema()}
	}
	if applied < latest {
		err := fmt.Errorf("schema %s is at migration %d of %d: run usersync migrate first", store.Schema(), applied, latest)
		return &Problem{Err: err, Public: err.Error(), Check: fixMigrations}
	}
	if ok, err := jobs.RiverMigrationsCurrent(ctx, store.Pool(), riverSchema); err != nil || !ok {
		err := fmt.Errorf("job queue schema %s is not migrated: run usersync migrate first", riverSchema)
		return &Problem{Err: err, Public: err.Error(), Check: fixMigrations}
	}
	return nil
}

// WritesTaken returns nil when the warehouse takes writes, else why not.
func WritesTaken(ctx context.Context, store *warehouse.Store) *Problem {
	err := store.Writable(ctx)
	if errors.Is(err, warehouse.ErrWritesRefused) {
		return &Problem{Err: err, Public: err.Error(), Check: fixWrites}
	}
	return nil // another error is the database's, which the other checks name
}

// checkDatabase is the database, migrations and writes checks, in
// databaseReachable's, migrationsCurrent's and writesTaken's words.
func (c *checker) checkDatabase(ctx context.Context) {
	if nr := DatabaseReachable(ctx, c.o.Ping); nr != nil {
		c.fail("database", oneLine(nr.Err.Error()), nr.Check)
		return
	}
	c.pass("database", "answers, as "+c.o.DatabaseShown)
	c.dbOK = true
	if nr := MigrationsCurrent(ctx, c.o.Store, c.o.RiverSchema); nr != nil {
		c.fail("migrations", oneLine(nr.Err.Error()), nr.Check)
		return
	}
	c.pass("migrations", fmt.Sprintf("schemas %s and %s are current", c.o.Store.Schema(), c.o.RiverSchema))
	c.migrated = true
	if nr := WritesTaken(ctx, c.o.Store); nr != nil {
		c.fail("writes", oneLine(nr.Err.Error()), nr.Check)
		return
	}
	c.pass("writes", "schema "+c.o.Store.Schema()+" takes writes")
}

// checkReaderRole checks that USERSYNC_READER_ROLE exists and may read every
// analysts' table, as usersync migrate grants it, and that no other role
// may read a table of the schema.
func (c *checker) checkReaderRole(ctx context.Context) {
	role := c.o.ReaderRole
	if role == "" {
		c.pass("reader role", "none (USERSYNC_READER_ROLE is empty)")
		return
	}
	if !c.migrated {
		c.notChecked("reader role", "migrations")
		return
	}
	exists, missing, err := warehouse.ReaderAccess(ctx, c.o.Store.Pool(), c.o.Store.Schema(), role)
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
		c.fail("reader role", fmt.Sprintf("role %s may not read %s.%s", role, c.o.Store.Schema(), strings.Join(missing, ", ")),
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
		c.pass("reader role", fmt.Sprintf("%s may read the analysts' tables of %s, and no other role", role, c.o.Store.Schema()))
	}
}
