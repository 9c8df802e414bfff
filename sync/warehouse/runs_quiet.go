package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// QuietRun is an incremental run that found nothing changed, as
// Runs.Quiet records it.
type QuietRun struct {
	// After is the run it follows: a run started since voids the record.
	After int64
	// Watermark is the users watermark After left.
	Watermark time.Time
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
}

// Quiet records q as a succeeded run in one statement, when nothing moved
// since q.After: no run since, the sync lock free, the watermark and the
// dimension digests unchanged, no user in quarantine, q's policy in use.
// It returns the new run's id, or ok false (and nothing written) when any
// of that fails, for the caller to take a run's full path.
func (r *Runs) Quiet(ctx context.Context, q QuietRun) (id int64, ok bool, err error) {
	sum, err := json.Marshal(q.Summary)
	if err != nil {
		return 0, false, fmt.Errorf("encoding the run summary: %w", err)
	}
	streams := make([]string, 0, len(q.Digests))
	digests := make([][]byte, 0, len(q.Digests))
	for s, d := range q.Digests {
		streams, digests = append(streams, s), append(digests, d)
	}
	p := q.Checkpoint.Progress
	unknown := p.Unknown
	if unknown == nil {
		unknown = map[string]int{}
	}
	var maxAt any
	if !q.Checkpoint.MaxUpdatedAt.IsZero() {
		maxAt = q.Checkpoint.MaxUpdatedAt
	}
	err = r.pool.QueryRow(ctx, r.sql.quietRun, q.After, q.Watermark, streams, digests, q.PolicyID, q.Fingerprint,
		q.Started, q.From, maxAt, p.Pages, p.Fetched, p.Unchanged, p.Requests, p.RateLimited, p.Retries,
		sum, unknown, q.CanWrite, q.JobID, r.lockKey).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("recording a run that changed nothing: %w", err)
	}
	return id, true, nil
}
