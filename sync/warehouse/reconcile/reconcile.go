package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgcopy"
)

// Why an id is queued for fetching.
const (
	fetchMissing  = "missing"
	fetchStale    = "stale"
	fetchRelinked = "relinked"
	fetchGone     = "gone"
)

// ScannedUser is one user as a reconcile's scan (or a fetch by id) saw it.
type ScannedUser struct {
	ID int64
	// UpdatedAt is the user's updatedAt; nil when the API sent none or an
	// unreadable one.
	UpdatedAt *time.Time
	// UpdatedText is updatedAt as sent, to recognise a quarantined resource
	// that has not changed since ("" when not a string).
	UpdatedText string
	// Links is the user's linkage to teams, roles and profiles: Links[i]
	// holds the ids of the catalog's type that the API sent for
	// schema.DimensionLinks()[i] (empty for an empty relationship), or nil
	// when it sent no data for it, which is then not compared. Links may be
	// shorter than the relationships (nil: none sent).
	Links [][]int64
}

// Comparison is what a scan found, before anything is written.
type Comparison struct {
	Scanned int64 // distinct ids the API listed
	Live    int64 // users not marked deleted in the warehouse
	Gone    int64 // live users the API did not list
}

// Queued counts the ids queued by QueueChanged.
type Queued struct {
	Missing int64 // listed by the API, absent from users
	Stale   int64 // stored with an older updated_at than the API's
	// QuarantineSkipped counts missing or stale ids left alone because an
	// unresolved quarantine record holds the same updatedAt: fetching them
	// would only quarantine them again.
	QuarantineSkipped int64
}

// Reconciliation is one reconcile's working set in the warehouse. It holds a
// pool connection until Close; it is not safe for concurrent use.
type Reconciliation struct {
	conn *pgxpool.Conn
	sql  statements
}

// Begin acquires a dedicated connection of st's pool, creates the fetch
// queue on it (emptied if a previous reconcile left it behind) and the walk's
// tables if they are missing. The caller holds the sync lock, continues the
// walk (ResumableWalk) or starts one (StartWalk), and must Close it.
func Begin(ctx context.Context, st *warehouse.Store) (*Reconciliation, error) {
	q, err := newStatements(st.Schema())
	if err != nil {
		return nil, err
	}
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquiring a connection for the reconcile: %w", err)
	}
	r := &Reconciliation{conn: conn, sql: q}
	if _, err := conn.Exec(ctx, r.sql.create); err != nil {
		conn.Release()
		return nil, fmt.Errorf("creating the reconcile tables: %w", err)
	}
	return r, nil
}

// Close drops the fetch queue and gives the connection back (a connection
// whose queue cannot be dropped is closed instead, which drops it too). The
// walk stays for the next attempt unless EndWalk ended it.
func (r *Reconciliation) Close() {
	if r == nil || r.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.conn.Exec(ctx, r.sql.drop); err != nil {
		_ = r.conn.Conn().Close(ctx)
	}
	r.conn.Release()
	r.conn = nil
}

// AddScanned records users the API returned by id, with COPY, in one
// transaction with the walk's row count.
func (r *Reconciliation) AddScanned(ctx context.Context, users []ScannedUser) error {
	if len(users) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		if err := r.copyScanned(ctx, tx, users); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, r.sql.addRows, len(users)); err != nil {
			return fmt.Errorf("counting %d scanned ids: %w", len(users), err)
		}
		return nil
	})
}

// copyScanned copies users into the scan.
func (r *Reconciliation) copyScanned(ctx context.Context, tx pgx.Tx, users []ScannedUser) error {
	cols := append([]string{"id", "updated_at", "updated_text"}, r.sql.linkColumns...)
	src := pgx.CopyFromSlice(len(users), func(i int) ([]any, error) {
		u := &users[i]
		vals := make([]any, len(cols))
		vals[0] = u.ID
		if u.UpdatedAt != nil {
			vals[1] = *u.UpdatedAt
		}
		if u.UpdatedText != "" {
			vals[2] = u.UpdatedText
		}
		for j := range min(len(u.Links), len(r.sql.linkColumns)) {
			if u.Links[j] != nil {
				vals[3+j] = u.Links[j]
			}
		}
		return vals, nil
	})
	if err := pgcopy.From(ctx, tx, r.sql.scanTable, cols, src); err != nil {
		return fmt.Errorf("copying %d scanned ids: %w", len(users), err)
	}
	return nil
}

// Compare indexes the scan and counts what it would change: the distinct ids
// listed, the live users, and the live users the API did not list. It writes
// nothing, so the caller can refuse a suspicious scan first.
func (r *Reconciliation) Compare(ctx context.Context) (Comparison, error) {
	var c Comparison
	if _, err := r.conn.Exec(ctx, r.sql.index); err != nil {
		return c, fmt.Errorf("indexing the scan: %w", err)
	}
	if err := r.conn.QueryRow(ctx, r.sql.compare).Scan(&c.Scanned, &c.Live, &c.Gone); err != nil {
		return c, fmt.Errorf("comparing the scan with the warehouse: %w", err)
	}
	return c, nil
}

// Undelete clears deleted_at of every user the scan listed, whether or not
// it changed, and adds the count to the run's undeleted counter.
func (r *Reconciliation) Undelete(ctx context.Context, runID int64) (int64, error) {
	var n int64
	if err := r.conn.QueryRow(ctx, r.sql.undelete, runID).Scan(&n); err != nil {
		return 0, fmt.Errorf("undeleting users that came back: %w", err)
	}
	return n, nil
}

// QueueChanged queues the ids the warehouse lacks and those it holds with an
// older updated_at than the API's.
func (r *Reconciliation) QueueChanged(ctx context.Context) (Queued, error) {
	var q Queued
	if err := r.conn.QueryRow(ctx, r.sql.queueChanged).Scan(&q.Missing, &q.Stale, &q.QuarantineSkipped); err != nil {
		return q, fmt.Errorf("queueing missing and stale users: %w", err)
	}
	return q, nil
}

// QueueDeletedLinks queues live users whose stored linkage points at a team,
// role or profile marked deleted (deleted maps a type to its deleted ids):
// the API shows those relationships without the deleted resource, and
// without moving the users' updatedAt.
func (r *Reconciliation) QueueDeletedLinks(ctx context.Context, deleted map[string][]int64) (int64, error) {
	args := make([]any, len(r.sql.dims))
	some := false
	for i, typ := range r.sql.dims {
		ids := deleted[typ]
		if ids == nil {
			ids = []int64{}
		}
		some = some || len(ids) > 0
		args[i] = ids
	}
	if !some {
		return 0, nil
	}
	var n int64
	if err := r.conn.QueryRow(ctx, r.sql.queueDeletedLinks, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("queueing users linked to deleted dimensions: %w", err)
	}
	return n, nil
}

// QueueLinkage queues the live users whose linkage to a team, role or
// profile, as the scan saw it, differs from the warehouse's: the API links
// and unlinks users when one of those is deleted or comes back without
// moving their updatedAt, so a user written in between (whether or not the
// warehouse ever saw the deletion) is otherwise never fetched again. Users
// already queued, and those the quarantine holds with the updatedAt the scan
// saw, are left alone.
func (r *Reconciliation) QueueLinkage(ctx context.Context) (int64, error) {
	var n int64
	if err := r.conn.QueryRow(ctx, r.sql.queueLinkage).Scan(&n); err != nil {
		return 0, fmt.Errorf("queueing users linked otherwise than the API links them: %w", err)
	}
	return n, nil
}

// QueueGone queues the live users the scan did not list, to be confirmed by
// id before they are marked deleted.
func (r *Reconciliation) QueueGone(ctx context.Context) (int64, error) {
	var n int64
	if err := r.conn.QueryRow(ctx, r.sql.queueGone).Scan(&n); err != nil {
		return 0, fmt.Errorf("queueing users the API did not list: %w", err)
	}
	return n, nil
}

// FetchBatch returns up to limit queued ids greater than after, ascending.
func (r *Reconciliation) FetchBatch(ctx context.Context, after int64, limit int) ([]int64, error) {
	rows, err := r.conn.Query(ctx, r.sql.fetchBatch, after, limit)
	if err != nil {
		return nil, fmt.Errorf("reading queued ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading queued ids: %w", err)
	}
	return ids, nil
}

// Queued counts the queued ids by reason.
func (r *Reconciliation) queued(ctx context.Context) (map[string]int64, error) {
	rows, err := r.conn.Query(ctx, r.sql.queued)
	if err != nil {
		return nil, fmt.Errorf("counting queued ids: %w", err)
	}
	out := map[string]int64{}
	var reason string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&reason, &n}, func() error { out[reason] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("counting queued ids: %w", err)
	}
	return out, nil
}

// MarkDeleted sets deleted_at on the live users that neither the scan nor a
// fetch by id returned, and adds the count to the run's deleted counter, in
// one transaction. It refuses, writing nothing, to mark more than limit: the
// caller checked that many against its safety valve.
func (r *Reconciliation) MarkDeleted(ctx context.Context, runID, limit int64) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, r.sql.markDeleted, runID).Scan(&n); err != nil {
			return err
		}
		if n > limit {
			return &TooManyDeletionsError{Would: n, Limit: limit}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("marking users deleted: %w", err)
	}
	return n, nil
}

// TooManyDeletionsError refuses to mark more users deleted than the
// reconcile's safety valve allowed.
type TooManyDeletionsError struct {
	Would, Limit int64
}

func (e *TooManyDeletionsError) Error() string {
	return fmt.Sprintf("%d users would be marked deleted, more than the %d allowed; nothing was marked", e.Would, e.Limit)
}

// DeletedDimensionIDs returns the ids of the teams, roles and profiles
// marked deleted, by type ("team", "role", "profile").
func (r *Reconciliation) DeletedDimensionIDs(ctx context.Context) (map[string][]int64, error) {
	return r.dimensionIDs(ctx, r.sql.deletedDimensionIDs, "deleted")
}

// RestoredDimensionIDs returns, by type, the ids of the live teams, roles
// and profiles that came back from a deletion, in any sync, since the last
// reconcile that succeeded (their version history has a gap).
func (r *Reconciliation) RestoredDimensionIDs(ctx context.Context) (map[string][]int64, error) {
	return r.dimensionIDs(ctx, r.sql.restoredDimensionIDs, "restored")
}

func (r *Reconciliation) dimensionIDs(ctx context.Context, sql, which string) (map[string][]int64, error) {
	rows, err := r.conn.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("listing %s teams, roles and profiles: %w", which, err)
	}
	out := map[string][]int64{}
	var typ string
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&typ, &id}, func() error {
		out[typ] = append(out[typ], id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s teams, roles and profiles: %w", which, err)
	}
	return out, nil
}
