// Package warehousetest sets up what the warehouse packages' tests share: a
// migrated schema of a test's own on the test PostgreSQL, and resources
// normalized from JSON:API text, so a test states its rows as the API would
// send them.
//
//	store := warehousetest.NewStore(t)
//	rows := warehousetest.Rows(t, schema.User(), body) // body: a JSON:API users page
//	n := warehousetest.Count(t, store, `SELECT count(*) FROM %s.users`)
package warehousetest
