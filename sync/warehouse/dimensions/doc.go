// Package dimensions writes the teams, roles and profiles: each full list as
// it is listed, page by page, their history of versions, and team
// membership (user_teams and its history). A list is loaded whole so that
// what it no longer holds can be marked deleted once the last page is in.
//
//	ds, err := dimensions.New(store)
//	load, err := ds.Begin(ctx, "team", runID)
//	defer load.Close()
//	for each page {
//		err = load.Page(ctx, rows, quarantined, writer)
//	}
//	counts, err := load.Finish(ctx)
package dimensions
