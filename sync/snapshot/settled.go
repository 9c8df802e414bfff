package snapshot

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// NotReadyError is returned by Write and WriteChanged, having written
// nothing, when the warehouse is not as a completed sync left it, because
// such a snapshot would hold tables from different moments. It is no failure:
// the next sync's snapshot is written.
type NotReadyError struct {
	// Reason says what is missing, for logs and the job's outcome.
	Reason string
	// RunID, Kind and Status name the run in the way; RunID is 0 when no run
	// has walked every user yet.
	RunID        int64
	Kind, Status string
	// NoCompleteWalk says no run has walked every user yet, whatever else
	// is in the way: only a sync's success can make a snapshot ready.
	NoCompleteWalk bool
}

// Error says why no snapshot was written.
func (e *NotReadyError) Error() string { return "no snapshot of an unfinished sync: " + e.Reason }

// checkSettled returns a NotReadyError unless the transaction sees the
// warehouse as a completed sync left it: a run walked every user, and the
// last run to end succeeded with none running since (sql/snapshot.sql's
// settled, read in the snapshot's transaction).
func checkSettled(ctx context.Context, tx pgx.Tx, q statements) error {
	var complete bool
	var last NotReadyError // the run that matters now; RunID 0 if there is none
	err := tx.QueryRow(ctx, q.settled).Scan(&complete, &last.RunID, &last.Kind, &last.Status)
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
	last.NoCompleteWalk = !complete
	return &last
}
