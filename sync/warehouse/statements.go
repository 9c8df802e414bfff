package warehouse

import (
	"embed"
)

// The core's statements live as SQL in sql/runs.sql, under "-- name: x"
// lines (see sqlfile). They are rendered once per Store;
// testdata/statements.golden.sql holds them, rendered for schema usersync
// (TestStatementsGolden).
//
//go:embed sql/*.sql
var sqlFiles embed.FS
