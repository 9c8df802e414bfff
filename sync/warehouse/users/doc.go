// Package users writes the users of a walk: each page in one transaction
// with the run's checkpoint, so a page is either stored with the cursor past
// it or not at all. A page is classified against what the warehouse holds
// (new, changed, unchanged), its team membership diffed and its replaced
// versions archived.
//
//	us, err := users.New(store)
//	deferred, err := us.StartLoad(ctx, logger) // defers an index on an empty warehouse
//	cp, err = us.WritePage(ctx, rows, quarantined, writer, func() (warehouse.Checkpoint, error) {
//		return checkpointAfterThePreviousPage, nil // the caller orders the pages
//	})
//	err = us.EndLoad(ctx, logger, deferred)
//
// The statements derived from the catalog come from pgrow; the others are
// in sql/users.sql.
package users
