package snapshot

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// NotReadyError is returned by Write and WriteChanged, before anything is
// written, when the warehouse as the snapshot's transaction sees it is not
// what a completed sync left: no run has walked every user yet, or a run is
// under way or stopped part way, so some of its commits (the dimensions, a
// few pages of users) are in and the rest are not. Such a snapshot would
// hold tables from different moments (issue #38: the first worker start
// published 0 users beside 120 teams). It is not a failure: the next
// snapshot after a run succeeds is written.
type NotReadyError struct {
	// Reason says what is missing, for logs and the job's outcome.
	Reason string
	// RunID, Kind and Status name the run in the way; RunID is 0 when no run
	// has walked every user yet.
	RunID        int64
	Kind, Status string
}

// Error says why no snapshot was written.
func (e *NotReadyError) Error() string { return "no snapshot of an unfinished sync: " + e.Reason }

// sqlSettled reads, in the snapshot's transaction, whether a run that walked
// every user (a full sync, or an incremental one without a watermark to
// start from, or an unbounded backfill) has succeeded, and the run that
// matters now: one still marked running (under way, or its process died and
// the next run resumes it) or, when none is, the one that ended last.
// Abandoned runs are left out: a later run took their work over.
const sqlSettled = `SELECT
	EXISTS (SELECT 1 FROM %[1]s.sync_runs WHERE status = 'succeeded' AND kind <> 'reconcile'
		AND range_from IS NULL AND range_until IS NULL),
	coalesce(r.run_id, 0), coalesce(r.kind, ''), coalesce(r.status, '')
FROM (SELECT 1) one LEFT JOIN LATERAL (
	SELECT run_id, kind, status FROM %[1]s.sync_runs WHERE status <> 'abandoned'
	ORDER BY status = 'running' DESC, finished_at DESC NULLS FIRST, run_id DESC LIMIT 1) r ON true`

// checkSettled returns a NotReadyError unless the transaction sees the
// warehouse as a completed sync left it: a run walked every user, and the
// last run to end succeeded with none running since.
func checkSettled(ctx context.Context, tx pgx.Tx, schemaName string) error {
	var complete bool
	var last NotReadyError // the run that matters now; RunID 0 if there is none
	err := tx.QueryRow(ctx, fmt.Sprintf(sqlSettled, pgx.Identifier{schemaName}.Sanitize())).Scan(&complete, &last.RunID, &last.Kind, &last.Status)
	if err != nil {
		return fmt.Errorf("reading the state of the syncs: %w", err)
	}
	switch {
	case last.Status == "running":
		last.Reason = fmt.Sprintf("%s run %d is under way (or its process stopped and the next run resumes it); "+
			"a snapshot is written once a run succeeds", last.Kind, last.RunID)
	case !complete:
		last = NotReadyError{Reason: "no sync has walked every user yet; the first snapshot is written once one succeeds"}
	case last.Status != "succeeded":
		last.Reason = fmt.Sprintf("the last run (%s, run %d) ended %s: part of it may be committed; "+
			"a snapshot is written once a run succeeds", last.Kind, last.RunID, last.Status)
	default:
		return nil
	}
	return &last
}
