package warehouse

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/normalize"
)

// storedUser is what the warehouse holds of a user that a page's write
// compares the page with. The fill part is read only for users whose page
// row left something unsent (see needsFill).
type storedUser struct {
	hash, linkage []byte
	deleted       bool
	other         []byte     // other_relationships, nil when NULL
	updatedAt     *time.Time // nil when NULL
	fill          *storedFill
}

// storedFill is the stored value of what a row may leave unsent.
type storedFill struct {
	toOne           []*int64  // per to-one column, nil when NULL
	dataConnections []byte    // nil when NULL
	arrays          [][]int64 // users: per array column, nil when NULL
}

// loadRow is a page's row as it is written: completed with what it left
// unsent, hashed, its linkage columns computed.
type loadRow struct {
	row              normalize.Row
	content, linkage []byte
	links            linkValues
}

// pageClass is what a page holds relative to the warehouse.
type pageClass struct {
	fresh          []loadRow      // ids new to the warehouse: copied straight in
	changed        []loadRow      // content or linkage differs, or the user came back: staged and upserted
	relinked       map[int64]bool // ids in changed whose linkage differs: their teams are diffed
	updated        int64          // ids in changed whose content differs or that came back
	contentChanged bool           // some stored content hash differs: versions to archive
	unchanged      int64          // ids whose content is the stored one
}

// classify compares a page's rows (one per id) with what the warehouse holds
// of them. It reads nothing and changes nothing: rows that left a to-one id,
// the data connections or an array relationship unsent are completed on a
// copy with the stored value, so "not sent" keeps what is stored and the
// hash stays that of the stored version.
func classify(rows []normalize.Row, stored map[int64]storedUser, links userLinks) pageClass {
	c := pageClass{relinked: map[int64]bool{}}
	for i := range rows {
		cur, ok := stored[rows[i].ID]
		row := rows[i]
		if ok {
			row = completed(row, cur, links, true)
		}
		lr := loadRow{row: row, content: row.Hash(), linkage: row.LinkageHash(), links: links.values(&row)}
		if !ok {
			c.fresh = append(c.fresh, lr)
			continue
		}
		if at, erased := normalize.ErasedAt(cur.hash); erased && at.Equal(row.UpdatedAt) {
			// Cleared by usersync forget, and not changed since: it stays
			// cleared (its linkage may still be written).
			lr.content = cur.hash
		}
		content := !bytes.Equal(cur.hash, lr.content)
		linkage := !bytes.Equal(cur.linkage, lr.linkage)
		if content || cur.deleted {
			c.updated++
			c.contentChanged = c.contentChanged || content
		} else {
			c.unchanged++ // its linkage may still be rewritten
		}
		if linkage {
			c.relinked[row.ID] = true
		}
		if content || linkage || cur.deleted {
			c.changed = append(c.changed, lr)
		}
	}
	return c
}

// completed returns row with what it left unsent taken from cur: to-one ids
// and, for users (hashed), the data connections and array relationships.
// The returned row shares no slice it changes with row.
func completed(row normalize.Row, cur storedUser, links userLinks, hashed bool) normalize.Row {
	if f := cur.fill; f != nil {
		cloned := false
		for j, o := range row.ToOne {
			if !o.Sent && j < len(f.toOne) && f.toOne[j] != nil {
				if !cloned {
					row.ToOne, cloned = slices.Clone(row.ToOne), true
				}
				row.ToOne[j] = normalize.ToOne{ID: *f.toOne[j], Valid: true}
			}
		}
		if hashed && !row.DataConnectionsSent && f.dataConnections != nil {
			row.DataConnections = f.dataConnections
		}
	}
	if !hashed {
		return row
	}
	var arrays [][]int64
	if cur.fill != nil {
		arrays = cur.fill.arrays
	}
	if arrays != nil || cur.other != nil {
		row = links.keepUnsent(row, arrays, cur.other)
	}
	return row
}

// needsFill reports whether row left unsent something the warehouse holds
// for it: a to-one id and, for users (hashed), the data connections or an
// array relationship.
func needsFill(row *normalize.Row, links userLinks, hashed bool) bool {
	if hashed && (!row.DataConnectionsSent || !links.sentAll(row)) {
		return true
	}
	for _, o := range row.ToOne {
		if !o.Sent {
			return true
		}
	}
	return false
}

// completeRows returns a dimension's rows ready to write, each completed
// with the stored to-one ids it left unsent.
func (s *Store) completeRows(ctx context.Context, tx pgx.Tx, t tableSQL, rows []normalize.Row) ([]loadRow, error) {
	var ids []int64
	for i := range rows {
		if needsFill(&rows[i], s.links, false) {
			ids = append(ids, rows[i].ID)
		}
	}
	fills, err := s.readFill(ctx, tx, t, ids)
	if err != nil {
		return nil, err
	}
	out := make([]loadRow, len(rows))
	for i := range rows {
		out[i].row = rows[i]
		if f, ok := fills[rows[i].ID]; ok {
			out[i].row = completed(rows[i], storedUser{fill: f}, s.links, false)
		}
	}
	return out, nil
}
