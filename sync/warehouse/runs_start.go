package warehouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartReads is what a run of one kind reads before it starts.
type StartReads struct {
	// Watermark is the users watermark, or the zero time when none.
	Watermark time.Time
	// Resume is the run of the kind to resume (Unfinished, else
	// FailedToResume), or nil.
	Resume *Run
}

// ReadStart reads the watermark and the run of kind to resume in one round
// trip, which PostgreSQL runs as one transaction: a no-op sync commits
// fewer. It abandons older unfinished runs as Unfinished does.
func (r *Runs) ReadStart(ctx context.Context, kind string) (StartReads, error) {
	b := &pgx.Batch{}
	b.Queue(r.sql.watermark, usersStream)
	b.Queue(r.sql.unfinishedRuns, kind)
	b.Queue(r.sql.failedRunToResume, kind)
	br := r.pool.SendBatch(ctx, b)
	reads, unfinished, failed, err := readStartBatch(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("reading the runs to resume: %w", cerr)
	}
	if err != nil {
		return StartReads{}, err
	}
	switch {
	case len(unfinished) > 0:
		reads.Resume, err = r.abandonOlder(ctx, unfinished)
	case len(failed) > 0:
		reads.Resume = &failed[0]
	}
	return reads, err
}

// readStartBatch reads the results of ReadStart's batch, in its order.
func readStartBatch(br pgx.BatchResults) (reads StartReads, unfinished, failed []Run, err error) {
	var w *time.Time
	if err := br.QueryRow().Scan(&w); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return reads, nil, nil, fmt.Errorf("reading the watermark: %w", err)
	}
	if w != nil {
		reads.Watermark = w.UTC()
	}
	rows, err := br.Query()
	if err == nil {
		unfinished, err = pgx.CollectRows(rows, scanRun)
	}
	if err != nil {
		return reads, nil, nil, fmt.Errorf("finding unfinished runs: %w", err)
	}
	rows, err = br.Query()
	if err == nil {
		failed, err = pgx.CollectRows(rows, scanRun)
	}
	if err != nil {
		return reads, nil, nil, fmt.Errorf("finding a failed run to resume: %w", err)
	}
	return reads, unfinished, failed, nil
}
