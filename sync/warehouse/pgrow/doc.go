// Package pgrow is how a resource's rows are stored in the warehouse, shared
// by the packages that write them (users, dimensions) and those that read
// them back (reconcile, pii, migrations), so that a column's order, encoding
// and content hash have a single definition.
//
// A Table holds one resource table's statements, built once from the catalog
// for a schema so the hot path only binds parameters; ColumnsOf is the only
// declaration of its COPY column order and encoders; a Row is a page's row as
// written, completed (Fill) with what the API left unsent and hashed; Links
// are a user's to-many linkages as array columns; Rehash recomputes
// content_hash from what a row stores.
//
//	t, err := pgrow.NewTable("usersync", schema.Team())
//	rows, err := t.Complete(ctx, tx, normalized)
//	_, err = tx.Exec(ctx, t.CreateStage)
//	n, err := pgrow.Copy(ctx, tx, t.CopyStage, &t, rows, pgrow.Writer{Run: runID})
//	err = tx.QueryRow(ctx, t.Upsert).Scan(&inserted, &updated)
package pgrow
