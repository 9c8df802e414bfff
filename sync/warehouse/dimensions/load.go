package dimensions

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgcopy"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// Load stages a dimension's full list page by page and applies it in one
// transaction at Finish, so no transaction stays open while the API is waited
// on and a list that fails half way marks nothing deleted. Close it after
// Begin; it is not safe for concurrent use.
type Load struct {
	s      *Store
	typ    string
	t      pgrow.Table
	sql    listSQL
	runID  int64
	conn   *pgxpool.Conn
	listed int64 // ids the API returned, quarantined ones included
	rows   int64 // typed rows staged: the next row's seq
	bad    int64 // quarantined resources staged: the next one's seq
	done   bool  // a Page or Finish failed, Finish ran or Close ran: no more pages
	// members of the teams the list brings back (see ReturningTeams)
	members map[int64][]int64
	digest  []byte // of the list, written with it (see SetDigest)
}

// SetDigest gives the digest of the whole list, written with it by Finish
// so that a later sync listing the same can skip it (Store.Digests). A
// load finished without one forgets the stored digest.
func (d *Load) SetDigest(digest []byte) { d.digest = digest }

// Begin starts the load of one dimension's full list: it takes a
// connection from the pool for the load's lifetime and creates its staging
// tables. runID is written on the quarantine records (0 for none).
func (s *Store) Begin(ctx context.Context, typ string, runID int64) (*Load, error) {
	t, ok := s.tables[typ]
	if !ok || typ == "user" {
		return nil, fmt.Errorf("loading dimension: %q is not a dimension", typ)
	}
	d := &Load{s: s, typ: typ, t: t, sql: s.lists[typ], runID: runID}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading %s: acquiring a connection: %w", t.Res.Table, err)
	}
	d.conn = conn
	if _, err := conn.Exec(ctx, d.sql.create); err != nil {
		d.Close()
		return nil, fmt.Errorf("loading %s: creating staging tables: %w", t.Res.Table, err)
	}
	return d, nil
}

// Page stages one page of the list: rows are its typed resources, bad its
// quarantined ones, present the id of every resource it returned. Rows whose
// to-one linkage was not sent are given the values the warehouse holds, as
// the users load does.
func (d *Load) Page(ctx context.Context, rows []normalize.Row, bad []warehouse.Quarantined, present []int64) error {
	if d.done || d.conn == nil {
		return fmt.Errorf("staging %s: the load has failed, finished or been closed", d.t.Res.Table)
	}
	if len(rows) == 0 && len(bad) == 0 && len(present) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, d.conn, func(tx pgx.Tx) error {
		if len(rows) > 0 {
			load, err := d.t.Complete(ctx, tx, rows)
			if err != nil {
				return err
			}
			// Each row is followed by its arrival order and its updatedAt.
			_, err = pgcopy.Binary(ctx, tx, d.sql.copyRows, len(rows), func(b []byte, i int) ([]byte, error) {
				b, err := d.t.AppendRow(pgcopy.AppendFieldCount(b, len(d.sql.rowColumns)), &load[i], pgrow.Writer{})
				if err != nil {
					return b, err
				}
				b = pgcopy.AppendBigint(b, d.rows+int64(i))
				if at := rows[i].UpdatedAt; !at.IsZero() {
					return pgcopy.AppendTimestamptz(b, at), nil
				}
				return pgcopy.AppendNull(b), nil
			})
			if err != nil {
				return fmt.Errorf("copying rows: %w", err)
			}
		}
		if len(present) > 0 {
			src := pgx.CopyFromSlice(len(present), func(i int) ([]any, error) { return []any{present[i]}, nil })
			if err := pgcopy.From(ctx, tx, d.sql.seenID, []string{"id"}, src); err != nil {
				return fmt.Errorf("copying ids: %w", err)
			}
		}
		if len(bad) > 0 {
			cols := []string{"seq", "resource_type", "resource_id", "field", "error", "raw"}
			src := pgx.CopyFromSlice(len(bad), func(i int) ([]any, error) {
				q := bad[i].Storable()
				return []any{d.bad + int64(i), q.Type, q.ID, q.Field, q.Error, q.Raw}, nil
			})
			if err := pgcopy.From(ctx, tx, d.sql.badID, cols, src); err != nil {
				return fmt.Errorf("copying quarantined resources: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		d.done = true
		return fmt.Errorf("staging %s: %w", d.t.Res.Table, err)
	}
	d.listed += int64(len(present))
	d.rows += int64(len(rows))
	d.bad += int64(len(bad))
	return nil
}

// Finish applies the staged list in one transaction and returns what it
// did. An empty list never deletes everything: when no page returned any
// id while the warehouse has live rows it fails with emptyListError and
// changes nothing.
func (d *Load) Finish(ctx context.Context) (warehouse.Counts, error) {
	if d.done || d.conn == nil {
		return warehouse.Counts{}, fmt.Errorf("loading %s: the load has failed, finished or been closed", d.t.Res.Table)
	}
	d.done = true // whatever happens, no more pages
	c, err := d.apply(ctx)
	if err != nil {
		return warehouse.Counts{}, fmt.Errorf("loading %s: %w", d.t.Res.Table, err)
	}
	return c, nil
}

func (d *Load) apply(ctx context.Context) (warehouse.Counts, error) {
	var c warehouse.Counts
	t := d.t
	err := pgx.BeginFunc(ctx, d.conn, func(tx pgx.Tx) error {
		if d.listed == 0 {
			var live int64
			if err := tx.QueryRow(ctx, t.LiveCount).Scan(&live); err != nil {
				return fmt.Errorf("counting live %s: %w", t.Res.Table, err)
			}
			if live > 0 {
				return &emptyListError{Table: t.Res.Table, Live: live}
			}
		}
		if d.rows > 0 {
			if err := d.upsert(ctx, tx, &c); err != nil {
				return err
			}
		}
		if err := d.replaceMembers(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, d.sql.delete)
		if err != nil {
			return fmt.Errorf("marking deleted %s: %w", t.Res.Table, err)
		}
		c.Deleted = tag.RowsAffected()
		if err := d.closeMembers(ctx, tx, c.Deleted); err != nil {
			return err
		}
		if err := d.quarantine(ctx, tx); err != nil {
			return err
		}
		c.Quarantined = d.bad
		var digest any
		if d.digest != nil {
			digest = d.digest
		}
		if _, err := tx.Exec(ctx, d.s.digests.writeDigest, t.Res.Table, digest); err != nil {
			return fmt.Errorf("writing the list's digest: %w", err)
		}
		// Dropped with the commit: Close has nothing left to clean.
		if _, err := tx.Exec(ctx, d.sql.drop); err != nil {
			return fmt.Errorf("dropping staging tables: %w", err)
		}
		return nil
	})
	if err != nil {
		return warehouse.Counts{}, err
	}
	d.release()
	return c, nil
}

// upsert writes the staged list, deduplicated, closing the versions it
// replaces into the history first.
func (d *Load) upsert(ctx context.Context, tx pgx.Tx, c *warehouse.Counts) error {
	t := d.t
	if _, err := tx.Exec(ctx, t.CreateStage); err != nil {
		return fmt.Errorf("creating staging table: %w", err)
	}
	tag, err := tx.Exec(ctx, d.sql.stage)
	if err != nil {
		return fmt.Errorf("deduplicating staged rows: %w", err)
	}
	if err := d.archive(ctx, tx); err != nil {
		return err
	}
	if err := tx.QueryRow(ctx, t.Upsert).Scan(&c.Inserted, &c.Updated); err != nil {
		return fmt.Errorf("upserting %s: %w", t.Res.Table, err)
	}
	c.Unchanged = tag.RowsAffected() - c.Inserted - c.Updated
	return nil
}

// quarantine resolves the quarantine records of the ids typed this time and
// writes the list's quarantined resources.
func (d *Load) quarantine(ctx context.Context, tx pgx.Tx) error {
	if d.rows > 0 {
		if _, err := tx.Exec(ctx, d.sql.resolve, d.typ); err != nil {
			return fmt.Errorf("resolving quarantine records: %w", err)
		}
	}
	if d.bad > 0 {
		if _, err := tx.Exec(ctx, d.sql.insert, pgrow.NullID(d.runID)); err != nil {
			return fmt.Errorf("writing quarantine records: %w", err)
		}
	}
	return nil
}

// Close ends the load. Before a successful Finish it drops the staged pages
// (nothing of them was applied); if that fails the connection is closed, which
// drops them as well. It is safe to call more than once.
func (d *Load) Close() {
	if d == nil || d.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.conn.Exec(ctx, d.sql.drop); err != nil {
		// The session may be gone or mid-statement; closing it drops its
		// temporary tables either way, and the pool discards it.
		_ = d.conn.Conn().Close(ctx)
	}
	d.release()
}

func (d *Load) release() {
	d.done = true
	d.conn.Release()
	d.conn = nil
}

// emptyListError refuses to mark every row of a dimension deleted because
// the API returned an empty list: an empty page is not a mass deletion.
type emptyListError struct {
	Table string
	Live  int64
}

func (e *emptyListError) Error() string {
	return fmt.Sprintf("the API returned no %s while the warehouse has %d live; refusing to mark them all deleted", e.Table, e.Live)
}
