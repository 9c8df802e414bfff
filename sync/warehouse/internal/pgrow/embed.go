package pgrow

import "embed"

// sqlFiles holds sql/rehash.sql, the statements that compute content_hash
// again from what a row stores.
//
//go:embed sql/*.sql
var sqlFiles embed.FS
