package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Walk is where a reconcile's id walk stands, as the last attempt left it.
// The walk's pages are recorded with the link to the next one (in the page's
// transaction), so an attempt cut short (a restart, a lost connection, a
// spent budget) is continued by the next attempt from the page after the
// last it recorded instead of walking every id again.
type Walk struct {
	RunID      int64         // the run that began it
	Age        time.Duration // since it began, on the database's clock
	Origin     string        // the API it walks, as given to StartWalk
	NextURL    string        // the checkpointed link to the next page; "" once complete
	Pages      int64         // pages recorded
	Unreadable int64         // listed resources without a usable id
	Complete   bool          // the last page was recorded
}

// ResumableWalk returns the walk an earlier attempt left, or nil and why it
// is not resumed ("" when there is none): it began more than maxAge ago (a
// walk's view of the ids behind its cursor is as old as the walk), it walks
// another API (origin), its scan has other columns (another version
// recorded it), or its scan does not hold the rows the walk recorded (a
// crash of PostgreSQL empties unlogged tables). maxAge <= 0 resumes none.
func (r *Reconciliation) ResumableWalk(ctx context.Context, origin string, maxAge time.Duration) (*Walk, string, error) {
	var w Walk
	var age float64
	var gotOrigin, layout string
	var rows, held int64
	err := r.conn.QueryRow(ctx, r.sql.readWalk).Scan(&w.RunID, &age, &gotOrigin, &layout, &w.NextURL,
		&w.Pages, &rows, &w.Unreadable, &w.Complete, &held)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, "", nil
	case err != nil:
		return nil, "", fmt.Errorf("reading the reconcile's walk: %w", err)
	}
	w.Age = time.Duration(age * float64(time.Second))
	w.Origin = gotOrigin
	switch {
	case maxAge <= 0:
		return nil, "resuming is turned off", nil
	case w.Age > maxAge:
		return nil, fmt.Sprintf("it began %s ago, more than the %s allowed", w.Age.Round(time.Second), maxAge), nil
	case gotOrigin != origin:
		return nil, "it walked another API URL", nil
	case layout != r.layout():
		return nil, "another version of usersync recorded it", nil
	case held != rows || (!w.Complete && w.NextURL == ""):
		return nil, fmt.Sprintf("its scan holds %d of the %d ids it recorded", held, rows), nil
	}
	return &w, "", nil
}

// layout names the scan's columns, so a walk recorded with other ones is
// not resumed.
func (r *Reconciliation) layout() string {
	return "v1:" + strings.Join(r.sql.linkColumns, ",")
}

// StartWalk discards any earlier walk and begins one for run runID over
// origin, the API's users URL (no credentials): the scan is made again, with
// the catalog's columns.
func (r *Reconciliation) StartWalk(ctx context.Context, runID int64, origin string) error {
	err := pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, r.sql.startWalk); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, r.sql.beginWalk, runID, origin, r.layout())
		return err
	})
	if err != nil {
		return fmt.Errorf("starting the reconcile's walk: %w", err)
	}
	return nil
}

// RecordPage records one page of the walk, its users (unreadable: the
// resources it listed without a usable id) and next, the checkpointed link
// to the page after it ("" after the last page), in one transaction.
func (r *Reconciliation) RecordPage(ctx context.Context, users []ScannedUser, unreadable int64, next string) error {
	var link *string // NULL once the walk is complete
	if next != "" {
		link = &next
	}
	return pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		if len(users) > 0 {
			if err := r.copyScanned(ctx, tx, users); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, r.sql.recordPage, link, len(users), unreadable)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("no walk is recorded")
		}
		if err != nil {
			return fmt.Errorf("checkpointing the walk: %w", err)
		}
		return nil
	})
}

// EndWalk empties the walk once the reconcile no longer needs it (its
// deletions are marked) or must not resume it (its scan was refused).
func (r *Reconciliation) EndWalk(ctx context.Context) error {
	if _, err := r.conn.Exec(ctx, r.sql.endWalk); err != nil {
		return fmt.Errorf("ending the reconcile's walk: %w", err)
	}
	return nil
}
