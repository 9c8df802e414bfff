package warehouse

import (
	"embed"
)

// The statements the program runs that are not derived from the catalog
// live as SQL in sql/*.sql, each under a "-- name: x" line; the catalog's
// column lists come in as {{...}} placeholders. They are rendered once per
// Store; testdata/statements.golden.sql holds every statement a Store runs,
// rendered for schema usersync (TestStatementsGolden).
//
//go:embed sql/*.sql
var sqlFiles embed.FS
