// Package reconcile compares every user id the API lists with the warehouse,
// to find what an incremental sync cannot see: users deleted, restored or
// relinked without a new updatedAt. The ids stream, page by page, into
// tables (COPY, so a million ids cost the Go process nothing) and the
// comparisons run in SQL.
//
// Nothing is ever deleted: users the API no longer returns get deleted_at,
// and users that come back lose it. An interrupted reconcile resumes its
// walk of the ids.
//
//	r, err := reconcile.Begin(ctx, store)
//	defer r.Close()
//	err = r.StartWalk(ctx, runID, origin)
//	for each page of ids {
//		err = r.RecordPage(ctx, scanned, unreadable, nextURL)
//	}
//	err = r.EndWalk(ctx)
//	queued, err := r.QueueChanged(ctx) // then fetch them by id (FetchBatch)
//	gone, err := r.MarkDeleted(ctx, runID, limit)
package reconcile
