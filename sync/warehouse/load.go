package warehouse

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/internal/pgcopy"
	"github.com/usersync/usersync/sync/warehouse/internal/pgrow"
)

// Quarantined is a resource that could not be typed, kept whole.
type Quarantined struct {
	Type  string // JSON:API type
	ID    string // the id as sent
	Field string // what could not be typed
	Error string // why
	Raw   []byte // the whole resource as JSON
}

// Counts are what a load did: one page, one dimension list, or (summed in
// Progress) a whole run. It is the one counts type of the run, its
// checkpoint, its summary, status, the --json outputs and the metrics.
type Counts struct {
	Inserted    int64 `json:"inserted"`
	Updated     int64 `json:"updated"`
	Unchanged   int64 `json:"unchanged"`
	Quarantined int64 `json:"quarantined"`
	Versions    int64 `json:"versions"` // user_versions rows written
	Deleted     int64 `json:"deleted"`  // ids marked deleted
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Inserted += o.Inserted
	c.Updated += o.Updated
	c.Unchanged += o.Unchanged
	c.Quarantined += o.Quarantined
	c.Versions += o.Versions
	c.Deleted += o.Deleted
}

// Checkpoint is a run's progress, written in the same transaction as the
// page it follows, so a crashed run resumes exactly after its last page.
type Checkpoint struct {
	RunID int64
	// PolicyID is the personal-data policy the run writes under
	// (Personal.NotePolicy's id; 0: not recorded), stored with each user.
	PolicyID     int64
	NextURL      string    // "" when the run has read its last page
	MaxUpdatedAt time.Time // greatest updatedAt committed so far (zero: none), up to Horizon
	// Horizon, when set, is the latest updatedAt that may become
	// MaxUpdatedAt (and so the watermark): a later one is stored, but
	// would make incremental syncs ask only for changes after it.
	Horizon  time.Time
	Progress Progress // cumulative counters of the run
}

func (cp *Checkpoint) writer() pgrow.Writer { return pgrow.Writer{Run: cp.RunID, Policy: cp.PolicyID} }

// Progress is a run's cumulative counters, saved with each checkpoint.
type Progress struct {
	Pages   int64 `json:"pages"`
	Fetched int64 `json:"fetched"`
	Counts
	Requests    int64          `json:"requests"`
	RateLimited int64          `json:"rate_limited"`
	Retries     int64          `json:"retries"`
	Unknown     map[string]int `json:"unknown_attributes"`
}

// LoadUsers writes one page of users in one transaction, as a UsersLoad
// does, and advances cp (nil: no checkpoint) once it has committed: for
// callers that write pages one at a time (the reconcile's fetches, tests).
func (s *Store) LoadUsers(ctx context.Context, rows []normalize.Row, bad []Quarantined, cp *Checkpoint) (Counts, error) {
	var w pgrow.Writer
	if cp != nil {
		w = cp.writer()
	}
	p, err := s.prepareUsers(ctx, rows, bad, w, false)
	if err != nil {
		return Counts{}, err
	}
	c, next, err := p.commit(ctx, cp)
	if err == nil && cp != nil {
		*cp = next
	}
	return c, err
}

// advance returns the checkpoint after a page: counters added, the greatest
// updatedAt seen, unknown attributes counted.
func advance(cp Checkpoint, rows []normalize.Row, c Counts) Checkpoint {
	p := &cp.Progress
	p.Pages++
	p.Fetched += int64(len(rows)) + c.Quarantined
	p.Add(c)
	unknown := make(map[string]int, len(p.Unknown))
	for k, v := range p.Unknown {
		unknown[k] = v
	}
	for _, r := range rows {
		for _, u := range r.Unknown {
			unknown[u]++
		}
		if r.UpdatedAt.After(cp.MaxUpdatedAt) && (cp.Horizon.IsZero() || !r.UpdatedAt.After(cp.Horizon)) {
			cp.MaxUpdatedAt = r.UpdatedAt
		}
	}
	p.Unknown = unknown
	return cp
}

// dedupe keeps one row per id, the one with the greatest updatedAt (the last
// one on ties), in first-seen order: a page may repeat an id.
func dedupe(rows []normalize.Row) []normalize.Row {
	seen := make(map[int64]int, len(rows))
	for i := range rows {
		if _, ok := seen[rows[i].ID]; ok {
			return dedupeCopy(rows)
		}
		seen[rows[i].ID] = i
	}
	return rows // the common case: no repeats, no copy
}

// dedupeCopy keeps, of each id, its row with the greatest updatedAt, in a new
// slice (the caller's is left alone).
func dedupeCopy(rows []normalize.Row) []normalize.Row {
	seen := make(map[int64]int, len(rows))
	out := rows[:0:0]
	for _, r := range rows {
		if i, ok := seen[r.ID]; ok {
			if !r.UpdatedAt.Before(out[i].UpdatedAt) {
				out[i] = r
			}
			continue
		}
		seen[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}

// usersEmpty reports whether the warehouse holds no user at all.
func (s *Store) usersEmpty(ctx context.Context) (bool, error) {
	var empty bool
	if err := s.pool.QueryRow(ctx, s.sql.usersEmpty).Scan(&empty); err != nil {
		return false, fmt.Errorf("checking whether users is empty: %w", err)
	}
	return empty, nil
}

// CopyUsersRaw copies rows straight into table (a table shaped like users,
// e.g. CREATE TABLE x (LIKE users)), committing every batch rows: no
// staging, no upsert, no history. It is the yardstick the benchmarks hold
// the sync's load path against, and returns the time spent copying and
// committing (the rows are hashed beforehand, outside it, as that is the
// sync's work and not COPY's).
func (s *Store) CopyUsersRaw(ctx context.Context, table string, rows []normalize.Row, batch int) (time.Duration, error) {
	t := s.tables["user"]
	load := make([]pgrow.Row, len(rows))
	for i := range rows {
		load[i] = pgrow.Row{Normalized: rows[i], Content: rows[i].Hash(), Linkage: rows[i].LinkageHash(), Links: s.links.Values(&rows[i])}
	}
	sql := pgcopy.Statement(s.q+"."+schema.QuoteIdentifier(table), t.Columns)
	start := time.Now()
	for from := 0; from < len(load); from += batch {
		to := min(from+batch, len(load))
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			_, err := pgrow.Copy(ctx, tx, sql, &t, load[from:to], pgrow.Writer{})
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("copying rows %d-%d: %w", from, to, err)
		}
	}
	return time.Since(start), nil
}
