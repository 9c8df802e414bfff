// Package users writes the users of a walk: each page in one transaction
// with the run's checkpoint (PreparePage, writepage.go: the caller orders the
// pages), classified against what the warehouse holds (userpage.go,
// classify.go), its team membership diffed, its replaced versions archived,
// and user_teams' team_id index deferred while a load starts on an empty
// warehouse (StartLoad and EndLoad, teamindex.go). Its
// statements are in sql/users.sql; those derived from the catalog come from
// pgrow. testdata/statements.golden.sql holds every one, rendered
// for schema usersync.
package users

import (
	"context"
	"embed"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/pii"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// pageLockTimeout bounds how long a users page's statements wait for a lock
// (PostgreSQL's lock_timeout): see prepareUsers.
const pageLockTimeout = "1min"

// Store writes the users of one warehouse schema.
type Store struct {
	pool   *pgxpool.Pool
	q      string // the quoted schema name
	table  pgrow.Table
	sql    userSQL
	rehash pgrow.Rehash
	links  pgrow.Links
	// under is the personal-data side users are written under (WriteUnder).
	under atomic.Pointer[pii.Store]
	// ddlLockTimeout bounds how long deferTeamIndex waits for user_teams'
	// exclusive lock.
	ddlLockTimeout string
}

// New returns the users Store of st's schema.
func New(st *warehouse.Store) (*Store, error) {
	return newStore(st.Pool(), st.Schema())
}

func newStore(pool *pgxpool.Pool, schemaName string) (*Store, error) {
	s := &Store{pool: pool, q: schema.QuoteIdentifier(schemaName), links: pgrow.NewLinks(schema.User()),
		ddlLockTimeout: teamIndexLockTimeout}
	var err error
	if s.table, err = pgrow.NewTable(schemaName, schema.User()); err != nil {
		return nil, err
	}
	if s.sql, err = newUserSQL(schemaName, s.table, pageLockTimeout); err != nil {
		return nil, err
	}
	if s.rehash, err = pgrow.NewRehash(schemaName); err != nil {
		return nil, err
	}
	return s, nil
}

// WriteUnder says which personal-data policy the Store's users writes
// follow: a stored user whose content differs from a page's row only by
// that policy (written under another, before usersync pii apply) is then
// converted in place, as pii apply would, rather than given a new version.
// Without it, such a user is rewritten as a new version.
func (s *Store) WriteUnder(pd *pii.Store) { s.under.Store(pd) }

// NoneUnresolved reports whether no user has an unresolved quarantine
// record: a run that starts so sets warehouse.Checkpoint.NoUnresolved, and
// its pages then resolve none.
func (s *Store) NoneUnresolved(ctx context.Context) (bool, error) {
	var none bool
	if err := s.pool.QueryRow(ctx, s.sql.noneUnresolved).Scan(&none); err != nil {
		return false, fmt.Errorf("reading the users' quarantine: %w", err)
	}
	return none, nil
}
