// Package pgcopy writes rows in PostgreSQL's binary COPY format, column type
// by column type, into a buffer the connection reads in chunks. pgx's
// CopyFrom would instead encode every value through its type map, each
// boxed in an interface, which cost more CPU than the server spent storing
// the rows.
//
//	n, err := pgcopy.Binary(ctx, tx, `COPY s.t (id, updated_at) FROM STDIN (FORMAT binary)`, len(rows),
//		func(b []byte, i int) ([]byte, error) {
//			b = pgcopy.AppendFieldCount(b, 2)
//			b = pgcopy.AppendBigint(b, rows[i].ID)
//			return pgcopy.AppendTimestamptz(b, rows[i].UpdatedAt), nil
//		})
package pgcopy
