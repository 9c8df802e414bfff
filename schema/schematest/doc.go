// Package schematest gives tests a real PostgreSQL: the database named by
// DATABASE_URL (make test starts a throwaway one) and a fresh schema per
// test, dropped when the test ends, so tests run in parallel without seeing
// each other's rows.
//
//	pool := schematest.NewPool(t, 4)
//	name := schematest.NewSchemaName(t, pool)
//	_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name})
//
// A runnable Example, which has no testing.T, uses OpenExample and defers
// the drop it returns.
package schematest
