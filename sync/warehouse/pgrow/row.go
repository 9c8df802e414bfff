package pgrow

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/normalize"
)

// Stored is what the warehouse holds of a user that a page's write
// compares the page with. The fill part is read only for users whose page
// row left something unsent (see needsFill).
type Stored struct {
	Hash, Linkage []byte
	Deleted       bool
	Other         []byte     // other_relationships, nil when NULL
	UpdatedAt     *time.Time // nil when NULL
	Fill          *Fill
}

// Fill is the stored value of what a row may leave unsent.
type Fill struct {
	ToOne           []*int64  // per to-one column, nil when NULL
	DataConnections []byte    // nil when NULL
	Arrays          [][]int64 // users: per array column, nil when NULL
}

// Row is a page's row as it is written: completed with what it left
// unsent, hashed, its linkage columns computed.
type Row struct {
	Normalized       normalize.Row
	Content, Linkage []byte
	Links            LinkValues
}

// Completed returns row with what it left unsent taken from cur: to-one ids
// and, for users (hashed), the data connections and array relationships.
// The returned row shares no slice it changes with row.
func Completed(row normalize.Row, cur Stored, links Links, hashed bool) normalize.Row {
	if f := cur.Fill; f != nil {
		cloned := false
		for j, o := range row.ToOne {
			if !o.Sent && j < len(f.ToOne) && f.ToOne[j] != nil {
				if !cloned {
					row.ToOne, cloned = slices.Clone(row.ToOne), true
				}
				row.ToOne[j] = normalize.ToOne{ID: *f.ToOne[j], Valid: true}
			}
		}
		if hashed && !row.DataConnectionsSent && f.DataConnections != nil {
			row.DataConnections = f.DataConnections
		}
	}
	if !hashed {
		return row
	}
	var arrays [][]int64
	if cur.Fill != nil {
		arrays = cur.Fill.Arrays
	}
	if arrays != nil || cur.Other != nil {
		row = links.KeepUnsent(row, arrays, cur.Other)
	}
	return row
}

// NeedsFill reports whether row left unsent something the warehouse holds
// for it: a to-one id and, for users (hashed), the data connections or an
// array relationship.
func NeedsFill(row *normalize.Row, links Links, hashed bool) bool {
	if hashed && (!row.DataConnectionsSent || !links.SentAll(row)) {
		return true
	}
	for _, o := range row.ToOne {
		if !o.Sent {
			return true
		}
	}
	return false
}

// Complete returns a dimension's rows ready to write, each completed with
// the stored to-one ids it left unsent.
func (t Table) Complete(ctx context.Context, tx pgx.Tx, rows []normalize.Row) ([]Row, error) {
	var ids []int64
	for i := range rows {
		if NeedsFill(&rows[i], Links{}, false) {
			ids = append(ids, rows[i].ID)
		}
	}
	fills, err := t.ReadFill(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Row, len(rows))
	for i := range rows {
		out[i].Normalized = rows[i]
		if f, ok := fills[rows[i].ID]; ok {
			out[i].Normalized = Completed(rows[i], Stored{Fill: f}, Links{}, false)
		}
	}
	return out, nil
}
