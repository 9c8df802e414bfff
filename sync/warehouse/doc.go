// Package warehouse is the core of the PostgreSQL warehouse: its
// migrations, the sync lock that keeps two runs off one schema, the record
// of runs with their checkpoints (sync_runs), and the status queries behind
// usersync status. Every statement is qualified with the configured schema,
// so one database can hold several deployments or accounts side by side.
//
//	_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: "usersync", ReaderRole: "analysts"})
//	store, err := warehouse.NewStore(pool, "usersync")
//	lock, err := store.TryLock(ctx) // warehouse.ErrLocked while another run holds it
//	runID, err := store.Runs().Start(ctx, warehouse.KindIncremental, nil, nil, nil)
//	status, err := store.Status(ctx, 10)
//
// The protocols that write the warehouse have packages of their own, each
// taking a Store for its pool and schema: users, dimensions, reconcile, pii
// and tokens; pgrow is how they store a row and pgcopy how they COPY it.
// The statements are in sql/*.sql (package sqlfile) and the versioned
// migrations in schema/migrations.
package warehouse
