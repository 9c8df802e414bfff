package warehouse

import (
	"embed"
)

// The core's statements live as SQL in sql/*.sql (runs.sql, locks.sql,
// migrate.sql), under "-- name: x" lines (see sqlfile). Those of a Store are
// rendered once per Store, the migration runner's from the schema name;
// testdata/statements.golden.sql holds them, rendered for schema usersync
// (TestStatementsGolden).
//
//go:embed sql/*.sql
var sqlFiles embed.FS
