// Package jobs is usersync's daemon side: the River job kinds, their thin
// workers, the periodic schedules, the fleet's tick over registered accounts
// and the River client. It is the only package besides cmd that imports
// River, so the sync itself (package syncer) runs the same from the CLI and
// from a job.
//
//	_, err := jobs.MigrateRiver(ctx, pool, jobs.RiverSchema("usersync"), logger) // under warehouse.WithMigrationLock
//	client, err := jobs.NewClient(jobs.ClientConfig{
//		Pool:        pool,
//		RiverSchema: jobs.RiverSchema("usersync"),
//		Deps:        &jobs.Deps{Syncer: s, Store: store, Logger: logger},
//		Schedules:   schedules, // from jobs.ParseSchedule
//		MaxWorkers:  2,
//		Logger:      logger,
//	})
//	err = client.Start(ctx)
package jobs
