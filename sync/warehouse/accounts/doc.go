// Package accounts is the registry of a fleet's accounts: the accounts table
// in the fleet's River schema, one row per registered account with its
// account-scoped settings and whether it is paused, and the views that unite
// every account's analysts' tables. The default account, the one the
// USERSYNC_* environment configures, is never stored, so a single-account
// deployment needs no registry.
//
//	reg, err := accounts.New(pool, "usersync_river") // the fleet's River schema
//	err = reg.Migrate(ctx) // under warehouse.WithMigrationLock, after River's migrations
//	err = reg.Add(ctx, accounts.Account{Name: "acme",
//		Settings: map[string]string{accounts.SchemaSetting: "usersync_acme"}})
//	err = reg.Pause(ctx, "acme")
//	list, err := reg.List(ctx)
//
// An account's Settings may hold secrets (sealed with package secret by the
// caller): never print them.
package accounts
