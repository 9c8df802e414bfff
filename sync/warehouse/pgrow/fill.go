package pgrow

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ReadFill reads the stored values of what rows may leave unsent, for ids.
func (t Table) ReadFill(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]*Fill, error) {
	if len(ids) == 0 || t.CurrentFill == "" {
		return nil, nil
	}
	out := make(map[int64]*Fill, len(ids))
	arrays := len(t.Res.ArrayLinks())
	err := ScanEach(ctx, tx, t.CurrentFill, ids, func(r pgx.Rows) error {
		f := &Fill{ToOne: make([]*int64, t.ToOnes)}
		if t.Hashed {
			f.Arrays = make([][]int64, arrays)
		}
		var id int64
		dest := []any{&id}
		for _, c := range t.Cols {
			if c.fill != nil {
				dest = append(dest, c.fill(f))
			}
		}
		if err := r.Scan(dest...); err != nil {
			return err
		}
		out[id] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading stored relationships: %w", err)
	}
	return out, nil
}

// ScanEach runs a query over a set of ids and calls scan for each row.
func ScanEach(ctx context.Context, tx pgx.Tx, sql string, ids []int64, scan func(pgx.Rows) error) error {
	rows, err := tx.Query(ctx, sql, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// NullID is id as a statement parameter: NULL for 0 (none).
func NullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}
