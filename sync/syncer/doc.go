// Package syncer runs syncs: it mirrors one account's API into its warehouse
// schema, resumably, so a run that dies costs only the page it was writing.
//
// A run lists the dimensions (teams, roles, profiles) in full, then the users
// by updatedAt from the watermark minus the lookback (or all of them, or a
// closed range for a backfill). Each users page is normalized and written in
// one transaction with the run's checkpoint while the next page downloads.
// A run that dies resumes from its checkpoint, and the watermark moves only
// after the last page commits. Reconcile compares every id the API lists with
// the warehouse, marking the users it no longer returns deleted.
//
//	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: url, Auth: auth, UserAgent: ua})
//	store, err := warehouse.NewStore(pool, "usersync") // after warehouse.Migrate
//	s := syncer.New(client, store, syncer.Config{Logger: logger})
//	sum, err := s.Run(ctx, syncer.Request{Kind: warehouse.KindIncremental})
//	if syncer.Interrupted(err) {
//		// stopped (drained or cancelled): the next run resumes
//	}
//	rec, err := s.Reconcile(ctx, syncer.ReconcileRequest{})
//
// Runs of one schema exclude each other through warehouse.Store.Lock: a
// second one fails with warehouse.ErrLocked unless Request.WaitLock is set.
package syncer
