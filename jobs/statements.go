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
	createSchema, jobTableExists, workerRunning, lastCreated, jobCounts, oldestRunning string
	oldestSnapshotJob, lastCurrentSnapshot, lastSnapshot, releaseOrphans               string
}

func newStatements(riverSchema string) (statements, error) {
	var q statements
	st, err := sqlfile.Load(sqlFiles, "jobs", map[string]string{"river": schema.QuoteIdentifier(riverSchema)})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("jobs", st, map[string]*string{
		"createSchema": &q.createSchema, "jobTableExists": &q.jobTableExists, "workerRunning": &q.workerRunning,
		"lastCreated": &q.lastCreated, "jobCounts": &q.jobCounts, "oldestRunning": &q.oldestRunning,
		"oldestSnapshotJob": &q.oldestSnapshotJob, "lastCurrentSnapshot": &q.lastCurrentSnapshot,
		"lastSnapshot": &q.lastSnapshot, "releaseOrphans": &q.releaseOrphans,
	})
}

// riverTables returns the statements of riverSchema and whether River's
// tables exist there yet: a worker that never migrated them reads as no
// jobs.
func riverTables(ctx context.Context, pool *pgxpool.Pool, riverSchema string) (statements, bool, error) {
	q, err := newStatements(riverSchema)
	if err != nil {
		return q, false, err
	}
	var exists bool
	if err := pool.QueryRow(ctx, q.jobTableExists, schema.QuoteIdentifier(riverSchema)).Scan(&exists); err != nil {
		return q, false, fmt.Errorf("finding River's job table: %w", err)
	}
	return q, exists, nil
}
