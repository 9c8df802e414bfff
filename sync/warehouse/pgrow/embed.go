package pgrow

import "embed"

// sqlFiles holds sql/table.sql, a resource table's statements, and
// sql/rehash.sql, those that compute content_hash again from what a row
// stores.
//
//go:embed sql/*.sql
var sqlFiles embed.FS
