package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Guard is a condition a caller adds to a statement that records a run:
// SQL, a boolean expression that may read any table, with its named
// arguments (@name), which must not clash with the statement's.
type Guard struct {
	SQL  string
	Args map[string]any
}

// QuietAnchor is what the quiet path continues from, kept in the
// warehouse (sync_state stream users_page) so that any process whose last
// no-op run read the same users page continues it: the digest of that page
// and the users watermark it was read from.
type QuietAnchor struct {
	Page      []byte
	Watermark time.Time
}

// QuietRun is an incremental run that found nothing changed, as
// Runs.Quiet records it.
type QuietRun struct {
	// Anchor is the users page the run read again and the watermark it
	// read it from: the warehouse's anchor must be the same, its run the
	// last one started.
	Anchor QuietAnchor
	// Digests is each dimension list's digest by table, as just listed.
	Digests map[string][]byte
	// PolicyID and Fingerprint are the personal-data policy the run
	// typed users under.
	PolicyID    int64
	Fingerprint string
	Started     time.Time
	From        *time.Time
	Checkpoint  Checkpoint // after its one page, which it did not write
	CanWrite    *bool
	JobID       *int64
	// Summary is what status reads of the run; its run_id is filled in.
	Summary any
	// Guard, when set, must hold too (the fleet's: the account is still
	// registered, not paused, with the settings it was opened with).
	Guard *Guard
}

// Quiet records q as a succeeded run in one statement, when nothing moved
// since the anchor's run: the anchor is q.Anchor and no run was started
// since its run, the sync lock free, the watermark and the dimension
// digests unchanged, no user in quarantine, q's policy in use, q.Guard
// true; the anchor then moves to the new run. It returns the new run's id,
// or ok false (and nothing written) when any of that fails, for the caller
// to take a run's full path.
func (r *Runs) Quiet(ctx context.Context, q QuietRun) (id int64, ok bool, err error) {
	sum, err := json.Marshal(q.Summary)
	if err != nil {
		return 0, false, fmt.Errorf("encoding the run summary: %w", err)
	}
	args := pgx.NamedArgs{"page": q.Anchor.Page, "watermark": q.Anchor.Watermark, "policy_id": q.PolicyID, "fingerprint": q.Fingerprint,
		"started": q.Started, "from": q.From, "can_write": q.CanWrite, "job_id": q.JobID, "summary": sum, "lock_key": r.lockKey}
	streams := make([]string, 0, len(q.Digests))
	digests := make([][]byte, 0, len(q.Digests))
	for s, d := range q.Digests {
		streams, digests = append(streams, s), append(digests, d)
	}
	args["streams"], args["digests"] = streams, digests
	p := q.Checkpoint.Progress
	args["pages"], args["fetched"], args["unchanged"] = p.Pages, p.Fetched, p.Unchanged
	args["requests"], args["rate_limited"], args["retries"] = p.Requests, p.RateLimited, p.Retries
	args["unknown"] = p.Unknown
	if p.Unknown == nil {
		args["unknown"] = map[string]int{}
	}
	args["max_updated_at"] = nil
	if !q.Checkpoint.MaxUpdatedAt.IsZero() {
		args["max_updated_at"] = q.Checkpoint.MaxUpdatedAt
	}
	sql := r.sql.quietRun
	if q.Guard != nil {
		sql = strings.Replace(sql, "/* guard */", "AND ("+q.Guard.SQL+")", 1)
		for k, v := range q.Guard.Args {
			args[k] = v
		}
	}
	err = r.pool.QueryRow(ctx, sql, args).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("recording a run that changed nothing: %w", err)
	}
	return id, true, nil
}
