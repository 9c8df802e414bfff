package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// rawCopier is the yardstick the backfill is held against: a page's rows
// copied straight into a table shaped like users (CREATE TABLE x (LIKE
// users INCLUDING ALL)) with the sync's own row encoder, committing every
// batch rows: no staging, no comparison, no history.
type rawCopier struct {
	pool  *pgxpool.Pool
	table pgrow.Table
	links pgrow.Links
	sql   string
}

// newRawCopier returns the copier into schemaName.table.
func newRawCopier(pool *pgxpool.Pool, schemaName, table string) (*rawCopier, error) {
	t, err := pgrow.NewTable(schemaName, schema.User())
	if err != nil {
		return nil, err
	}
	sql := fmt.Sprintf("COPY %s.%s (%s) FROM STDIN (FORMAT binary)", schema.QuoteIdentifier(schemaName), schema.QuoteIdentifier(table), strings.Join(pgrow.QuoteAll(t.Columns), ", "))
	return &rawCopier{pool: pool, table: t, links: pgrow.NewLinks(schema.User()), sql: sql}, nil
}

// copy copies rows and returns the time spent copying and committing. The
// rows are hashed first, outside that time: hashing is the sync's work,
// not COPY's.
func (c *rawCopier) copy(ctx context.Context, rows []normalize.Row, batch int) (time.Duration, error) {
	load := make([]pgrow.Row, len(rows))
	for i := range rows {
		load[i] = pgrow.Row{Normalized: rows[i], Content: rows[i].Hash(), Linkage: rows[i].LinkageHash(), Links: c.links.Values(&rows[i])}
	}
	start := time.Now()
	for from := 0; from < len(load); from += batch {
		to := min(from+batch, len(load))
		err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
			_, err := pgrow.Copy(ctx, tx, c.sql, &c.table, load[from:to], pgrow.Writer{})
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("copying rows %d-%d: %w", from, to, err)
		}
	}
	return time.Since(start), nil
}
