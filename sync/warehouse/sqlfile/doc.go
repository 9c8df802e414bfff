// Package sqlfile reads the statements a warehouse package runs from its
// embedded sql/*.sql files, so the SQL can be read, diffed and EXPLAINed
// apart from the Go code. Each statement stands under a "-- name: x" line,
// with {{key}} placeholders for what is known only at run time (the quoted
// schema, the catalog's column lists). A package renders them once, when
// its store is made, and keeps them in a golden file that its tests hold
// true (package golden).
//
//	//go:embed sql/*.sql
//	var sqlFiles embed.FS
//
//	st, err := sqlfile.Load(sqlFiles, "runs", map[string]string{"schema": schema.QuoteIdentifier(name)})
//	err = sqlfile.Assign("runs", st, map[string]*string{"startRun": &q.startRun, "endRun": &q.endRun})
//
// A placeholder that cannot be a parameter and is known only when the
// statement runs (an identifier, the literal of a utility statement) is
// loaded as Later and filled by Fill.
package sqlfile
