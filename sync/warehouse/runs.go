package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Run kinds recorded in sync_runs.
const (
	KindIncremental = "incremental"
	KindFull        = "full"
	KindBackfill    = "backfill"
	KindReconcile   = "reconcile"
)

// usersStream is the sync_state stream of users.
const usersStream = "users"

// Run is a row of sync_runs.
type Run struct {
	ID           int64
	Kind         string
	Status       string
	StartedAt    time.Time
	FinishedAt   *time.Time
	RangeFrom    *time.Time
	RangeUntil   *time.Time
	NextURL      string
	MaxUpdatedAt *time.Time
	Progress     Progress
	Error        string
	JobID        *int64
	Summary      []byte // the summary JSON of a finished run
}

// Runs records the runs of one schema in sync_runs: each run's start, its
// checkpoint's progress, its end, and the watermark incremental syncs read.
type Runs struct {
	pool    *pgxpool.Pool
	sql     runSQL
	lockKey string // the sync lock's (Store.lockKey), which Quiet takes for its statement
}

// Start records a new run and returns its id.
func (r *Runs) Start(ctx context.Context, kind string, from, until *time.Time, jobID *int64) (int64, error) {
	var id int64
	err := r.pool.QueryRow(ctx, r.sql.startRun, kind, from, until, jobID).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording the run: %w", err)
	}
	return id, nil
}

// Unfinished returns the newest run of kind still marked running (its
// process died: the caller holds the sync lock, so no live process owns it),
// or nil. Older unfinished runs are marked abandoned.
func (r *Runs) Unfinished(ctx context.Context, kind string) (*Run, error) {
	rows, err := r.pool.Query(ctx, r.sql.unfinishedRuns, kind)
	if err != nil {
		return nil, fmt.Errorf("finding unfinished runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("finding unfinished runs: %w", err)
	}
	if len(runs) == 0 {
		return nil, nil
	}
	return r.abandonOlder(ctx, runs)
}

// abandonOlder marks abandoned the unfinished runs after the first (the
// newest) and returns the first.
func (r *Runs) abandonOlder(ctx context.Context, runs []Run) (*Run, error) {
	if len(runs) > 1 {
		var old []int64
		for _, r := range runs[1:] {
			old = append(old, r.ID)
		}
		if _, err := r.pool.Exec(ctx, r.sql.abandonRuns, old); err != nil {
			return nil, fmt.Errorf("abandoning old runs: %w", err)
		}
	}
	return &runs[0], nil
}

// runColumns are the columns scanRun reads, in its order.
const runColumns = `run_id, kind, status, started_at, finished_at, range_from, range_until,
	coalesce(next_url, ''), max_updated_at, pages, fetched, inserted, updated, unchanged, quarantined,
	requests, rate_limited, retries, unknown_attributes, coalesce(error, ''), job_id, summary, versions`

func scanRun(row pgx.CollectableRow) (Run, error) {
	var r Run
	var unknown []byte
	err := row.Scan(&r.ID, &r.Kind, &r.Status, &r.StartedAt, &r.FinishedAt, &r.RangeFrom, &r.RangeUntil,
		&r.NextURL, &r.MaxUpdatedAt, &r.Progress.Pages, &r.Progress.Fetched, &r.Progress.Inserted,
		&r.Progress.Updated, &r.Progress.Unchanged, &r.Progress.Quarantined, &r.Progress.Requests,
		&r.Progress.RateLimited, &r.Progress.Retries, &unknown, &r.Error, &r.JobID, &r.Summary, &r.Progress.Versions)
	if err != nil {
		return r, err
	}
	if len(unknown) > 0 {
		if err := json.Unmarshal(unknown, &r.Progress.Unknown); err != nil {
			return r, fmt.Errorf("decoding unknown_attributes: %w", err)
		}
	}
	return r, nil
}

// Abandon marks a run abandoned (a resumed or superseded run).
func (r *Runs) Abandon(ctx context.Context, runID int64) error {
	_, err := r.pool.Exec(ctx, r.sql.abandonRuns, []int64{runID})
	if err != nil {
		return fmt.Errorf("abandoning run %d: %w", runID, err)
	}
	return nil
}

// RunSuccess is how a run that succeeded ended, as Finish records it.
type RunSuccess struct {
	// Summary is what status reads of the run, stored as JSON.
	Summary any
	// CanWrite is the API user's write access as the run last saw it, or
	// nil when the run did not see it.
	CanWrite *bool
	// Advance moves the users watermark to the greatest updatedAt the run
	// committed, never backwards.
	Advance bool
	// Checkpoint, when set, is the checkpoint after the run's last page,
	// stored with the run's end: a walk does not commit a last page that
	// changed nothing (users.PreparedPage.Commit), its checkpoint included.
	Checkpoint *Checkpoint
	// Anchor, when set, makes the run the anchor of the quiet path (see
	// Runs.Quiet) if the users watermark is still Anchor.Watermark after it.
	Anchor *QuietAnchor
}

// Finish marks the run succeeded with s.Summary and, when s.Advance is set
// and the run committed any updatedAt, moves the users watermark to the
// greatest updatedAt committed, and records s.Anchor. One statement: the
// watermark moves only with the run's success. It returns the users
// watermark after it, or the zero time when none, so that a run need not
// read it again.
func (r *Runs) Finish(ctx context.Context, runID int64, s RunSuccess) (time.Time, error) {
	sum, err := json.Marshal(s.Summary)
	if err != nil {
		return time.Time{}, fmt.Errorf("encoding the run summary: %w", err)
	}
	args := []any{runID, sum, s.CanWrite, s.Advance, usersStream}
	if cp := s.Checkpoint; cp == nil {
		args = append(args, nil, nil, nil, nil, nil, nil, nil, 0, 0, 0, nil, nil)
	} else {
		p := cp.Progress
		unknown := p.Unknown
		if unknown == nil {
			unknown = map[string]int{}
		}
		var maxAt any
		if !cp.MaxUpdatedAt.IsZero() {
			maxAt = cp.MaxUpdatedAt
		}
		args = append(args, maxAt, p.Pages, p.Fetched, p.Inserted, p.Updated, p.Unchanged, p.Quarantined,
			p.Requests, p.RateLimited, p.Retries, unknown, p.Versions)
	}
	if a := s.Anchor; a != nil {
		args = append(args, a.Page, a.Watermark)
	} else {
		args = append(args, nil, nil)
	}
	var wm *time.Time
	if err := r.pool.QueryRow(ctx, r.sql.finishRun, args...).Scan(&wm); err != nil {
		return time.Time{}, fmt.Errorf("finishing run %d: %w", runID, err)
	}
	if wm == nil {
		return time.Time{}, nil
	}
	return wm.UTC(), nil
}

// RunEnd is how a run that did not succeed ended.
type RunEnd string

const (
	// RunFailed is a run an error stopped.
	RunFailed RunEnd = "failed"
	// RunPaused is a run that stopped to wait for the API's rate limit;
	// nothing failed.
	RunPaused RunEnd = "paused"
	// RunInterrupted is a run its process stopped (Ctrl-C, SIGTERM, a
	// worker draining for shutdown); nothing failed.
	RunInterrupted RunEnd = "interrupted"
)

// RunEnding is how a run that did not succeed ended, as EndRun records it.
type RunEnding struct {
	End RunEnd
	Err error
	// Requests holds the run's request counters (Requests, RateLimited,
	// Retries; the other fields are not read): a run that stopped before
	// its first page committed has them nowhere else.
	Requests Progress
	// Summary is a JSON object of what status reads of a run that did not
	// succeed (its rate_limit, refused credentials), or nil.
	Summary json.RawMessage
}

// End marks the run failed, paused or interrupted with its error, cleaned
// by CleanText (the error may quote a hostile server, and a NUL alone would
// make the update fail and leave the run marked running), its request
// counters (never lowered) and e.Summary as its summary. The checkpoint
// stays, so the next run of its kind resumes from it.
func (r *Runs) End(ctx context.Context, runID int64, e RunEnding) error {
	msg := "unknown error"
	if e.Err != nil {
		msg = CleanText(e.Err.Error())
	}
	var sum *string // NULL, not the text "null", when there is none
	if len(e.Summary) > 0 {
		v := string(e.Summary)
		sum = &v
	}
	p := e.Requests
	_, err := r.pool.Exec(ctx, r.sql.endRun, runID, msg, string(e.End), sum, p.Requests, p.RateLimited, p.Retries)
	if err != nil {
		return fmt.Errorf("recording the end of run %d: %w", runID, err)
	}
	return nil
}

// FailedToResume returns the newest failed, paused or interrupted run of kind that
// stopped with a checkpoint and was not followed by a success, or nil: such a
// run resumes like a crashed one.
func (r *Runs) FailedToResume(ctx context.Context, kind string) (*Run, error) {
	rows, err := r.pool.Query(ctx, r.sql.failedRunToResume, kind)
	if err != nil {
		return nil, fmt.Errorf("finding a failed run to resume: %w", err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return &runs[0], nil
}

// Watermark returns the users watermark, or the zero time when none.
func (r *Runs) Watermark(ctx context.Context) (time.Time, error) {
	var w *time.Time
	err := r.pool.QueryRow(ctx, r.sql.watermark, usersStream).Scan(&w)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && w == nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the watermark: %w", err)
	}
	return w.UTC(), nil
}

// Reopen marks a failed or unfinished run running again (a resumed run keeps
// its id, counters and checkpoint). A run resumed by another job takes that
// job's id.
func (r *Runs) Reopen(ctx context.Context, runID int64, jobID *int64) error {
	_, err := r.pool.Exec(ctx, r.sql.reopenRun, runID, jobID)
	if err != nil {
		return fmt.Errorf("reopening run %d: %w", runID, err)
	}
	return nil
}

// OfJob returns the newest run started by the River job id, or nil.
func (r *Runs) OfJob(ctx context.Context, jobID int64) (*Run, error) {
	rows, err := r.pool.Query(ctx, r.sql.runOfJob, jobID)
	if err != nil {
		return nil, fmt.Errorf("reading the run of job %d: %w", jobID, err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil || len(runs) == 0 {
		if err != nil {
			err = fmt.Errorf("reading the run of job %d: %w", jobID, err)
		}
		return nil, err
	}
	return &runs[0], nil
}

// Touch records a run's request counters and heartbeat, for a run that
// works between page commits (a reconcile's scan) and before it finishes.
func (r *Runs) Touch(ctx context.Context, runID int64, p Progress) error {
	_, err := r.pool.Exec(ctx, r.sql.touchRun, runID, p.Requests, p.RateLimited, p.Retries)
	if err != nil {
		return fmt.Errorf("recording the progress of run %d: %w", runID, err)
	}
	return nil
}
