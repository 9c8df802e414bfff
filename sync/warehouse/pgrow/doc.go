// Package pgrow is how a resource's rows are stored in the warehouse, shared
// by the packages that write them (users, dimensions) and those that read
// them back (reconcile, personal data, migrations):
//
//   - Table: one resource table's statements, derived from the catalog
//     (COPY, staging upsert, reads of stored values) (table.go);
//   - Column and ColumnsOf: the only declaration of a table's COPY column
//     order and encoders (columns.go);
//   - Row, Stored, Fill: a row as written, and what the warehouse holds of
//     it that a row may leave unsent (row.go, fill.go);
//   - Links: a user's to-many linkage as array columns (links.go);
//   - Rehash and Content: content_hash computed again from what a row
//     stores, its statements in sql/rehash.sql (rehash.go).
package pgrow
