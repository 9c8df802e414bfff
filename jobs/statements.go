package jobs

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the statements of sql/jobs.sql, rendered for one River
// schema.
type statements struct {
	createSchema, jobTableExists, workerRunning, jobCounts, oldestRunning string
	oldestSnapshotJob, lastCurrentSnapshot, lastSnapshot                  string
	createAccountIndex, lastCreatedOf, firstSynced                        string
}

func newStatements(riverSchema string) (statements, error) {
	var q statements
	st, err := sqlfile.Load(sqlFiles, "jobs", map[string]string{"river": schema.QuoteIdentifier(riverSchema)})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("jobs", st, map[string]*string{
		"createSchema": &q.createSchema, "jobTableExists": &q.jobTableExists, "workerRunning": &q.workerRunning,
		"jobCounts": &q.jobCounts, "oldestRunning": &q.oldestRunning,
		"oldestSnapshotJob": &q.oldestSnapshotJob, "lastCurrentSnapshot": &q.lastCurrentSnapshot,
		"lastSnapshot":       &q.lastSnapshot,
		"createAccountIndex": &q.createAccountIndex, "lastCreatedOf": &q.lastCreatedOf, "firstSynced": &q.firstSynced,
	})
}

// riverDB is River's tables in one schema with usersync's statements on
// them, rendered once: a value that queries River's tables again and again
// (a metrics collector at every scrape, the fleet's tick)
// holds one.
type riverDB struct {
	pool   *pgxpool.Pool
	schema string
	q      statements
}

func newRiverDB(pool *pgxpool.Pool, riverSchema string) (*riverDB, error) {
	q, err := newStatements(riverSchema)
	if err != nil {
		return nil, err
	}
	return &riverDB{pool: pool, schema: riverSchema, q: q}, nil
}

// tablesExist says whether River's tables exist yet: a worker that never
// migrated them reads as no jobs.
func (r *riverDB) tablesExist(ctx context.Context) (bool, error) {
	var exists bool
	if err := r.pool.QueryRow(ctx, r.q.jobTableExists, schema.QuoteIdentifier(r.schema)).Scan(&exists); err != nil {
		return false, fmt.Errorf("finding River's job table: %w", err)
	}
	return exists, nil
}
