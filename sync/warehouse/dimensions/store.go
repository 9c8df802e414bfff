package dimensions

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Store writes the dimensions of one warehouse schema.
type Store struct {
	pool    *pgxpool.Pool
	q       string // the quoted schema name
	tables  map[string]pgrow.Table
	lists   map[string]listSQL    // by dimension type
	history map[string]historySQL // by dimension type
	teams   teamSQL
	digests digestSQL
}

// digestSQL holds the statements of sql/digests.sql.
type digestSQL struct {
	readDigests, writeDigest string
}

// teamSQL holds the membership statements of sql/teams.sql.
type teamSQL struct {
	lastSyncListedMembership, liveTeamIDs, replaceTeamMembers string
}

// New returns the dimensions Store of st's schema.
func New(st *warehouse.Store) (*Store, error) {
	return newStore(st.Pool(), st.Schema())
}

func newStore(pool *pgxpool.Pool, schemaName string) (*Store, error) {
	s := &Store{pool: pool, q: schema.QuoteIdentifier(schemaName), tables: map[string]pgrow.Table{}}
	s.lists = map[string]listSQL{}
	for _, res := range schema.Dimensions() {
		t, err := pgrow.NewTable(schemaName, res)
		if err != nil {
			return nil, err
		}
		s.tables[res.Type] = t
		l, err := s.listSQL(t)
		if err != nil {
			return nil, err
		}
		s.lists[res.Type] = l
	}
	var err error
	if s.history, err = s.newHistorySQL(schemaName); err != nil {
		return nil, err
	}
	st, err := sqlfile.Load(sqlFiles, "teams", map[string]string{"schema": s.q})
	if err != nil {
		return nil, err
	}
	err = sqlfile.Assign("teams", st, map[string]*string{"lastSyncListedMembership": &s.teams.lastSyncListedMembership,
		"liveTeamIDs": &s.teams.liveTeamIDs, "replaceTeamMembers": &s.teams.replaceTeamMembers})
	if err != nil {
		return nil, err
	}
	if st, err = sqlfile.Load(sqlFiles, "digests", map[string]string{"schema": s.q}); err != nil {
		return nil, err
	}
	err = sqlfile.Assign("digests", st, map[string]*string{"readDigests": &s.digests.readDigests, "writeDigest": &s.digests.writeDigest})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Digests returns the digest of each dimension list last applied, by
// table; a table whose digest is unknown is absent.
func (s *Store) Digests(ctx context.Context) (map[string][]byte, error) {
	tables := make([]string, 0, len(s.tables))
	for _, t := range s.tables {
		tables = append(tables, t.Res.Table)
	}
	rows, err := s.pool.Query(ctx, s.digests.readDigests, tables)
	if err != nil {
		return nil, fmt.Errorf("reading the dimension digests: %w", err)
	}
	out := map[string][]byte{}
	var table string
	var digest []byte
	_, err = pgx.ForEachRow(rows, []any{&table, &digest}, func() error {
		out[table] = append([]byte(nil), digest...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the dimension digests: %w", err)
	}
	return out, nil
}

// LastSyncListedMembership reports whether the newest successful sync had
// to list team membership per team (the API sent users' teams without data).
func (s *Store) LastSyncListedMembership(ctx context.Context) (bool, error) {
	var listed bool
	if err := s.pool.QueryRow(ctx, s.teams.lastSyncListedMembership).Scan(&listed); err != nil {
		return false, fmt.Errorf("reading the last sync: %w", err)
	}
	return listed, nil
}
