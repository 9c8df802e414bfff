package warehouse

import (
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/internal/pgrow"
)

// pageLockTimeout bounds how long a users page's statements wait for a lock
// (PostgreSQL's lock_timeout): see prepareUsers.
const pageLockTimeout = "1min"

// Store reads and writes one warehouse schema.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	q      string // the quoted schema name, for statements
	tables map[string]pgrow.Table
	sql    userSQL
	runs   runSQL
	rehash pgrow.Rehash
	// under is the personal-data side users are written under (WriteUnder).
	under atomic.Pointer[Personal]
	links pgrow.Links
	// ddlLockTimeout bounds how long deferTeamIndex waits for user_teams'
	// exclusive lock.
	ddlLockTimeout string
}

// NewStore returns a Store for the warehouse in schemaName.
func NewStore(pool *pgxpool.Pool, schemaName string) (*Store, error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, schema: schemaName, q: schema.QuoteIdentifier(schemaName), tables: map[string]pgrow.Table{}, ddlLockTimeout: teamIndexLockTimeout}
	for _, r := range schema.Resources() {
		s.tables[r.Type] = pgrow.NewTable(schemaName, r)
	}
	var err error
	if s.sql, err = newUserSQL(schemaName, s.tables["user"], pageLockTimeout); err != nil {
		return nil, err
	}
	if s.runs, err = newRunSQL(schemaName); err != nil {
		return nil, err
	}
	if s.rehash, err = pgrow.NewRehash(schemaName); err != nil {
		return nil, err
	}
	s.links = pgrow.NewLinks(schema.User())
	return s, nil
}

// Schema returns the warehouse schema's name.
func (s *Store) Schema() string { return s.schema }

// Pool returns the store's pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// WriteUnder says which personal-data policy the Store's users writes
// follow: a stored user whose content differs from a page's row only by
// that policy (written under another, before usersync pii apply) is then
// converted in place, as pii apply would, rather than given a new version.
// Without it, such a user is rewritten as a new version.
func (s *Store) WriteUnder(pd *Personal) { s.under.Store(pd) }
