package users

import (
	"bytes"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// pageClass is what a page holds relative to the warehouse.
type pageClass struct {
	fresh          []pgrow.Row    // ids new to the warehouse: copied straight in
	changed        []pgrow.Row    // content or linkage differs, or the user came back: staged and upserted
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
func classify(rows []normalize.Row, stored map[int64]pgrow.Stored, links pgrow.Links) pageClass {
	c := pageClass{relinked: map[int64]bool{}}
	for i := range rows {
		cur, ok := stored[rows[i].ID]
		row := rows[i]
		if ok {
			row = pgrow.Completed(row, cur, links, true)
		}
		lr := pgrow.Row{Normalized: row, Content: row.Hash(), Linkage: row.LinkageHash(), Links: links.Values(&row)}
		if !ok {
			c.fresh = append(c.fresh, lr)
			continue
		}
		if at, erased := normalize.ErasedAt(cur.Hash); erased && at.Equal(row.UpdatedAt) {
			// Cleared by usersync forget, and not changed since: it stays
			// cleared (its linkage may still be written).
			lr.Content = cur.Hash
		}
		content := !bytes.Equal(cur.Hash, lr.Content)
		linkage := !bytes.Equal(cur.Linkage, lr.Linkage)
		if content || cur.Deleted {
			c.updated++
			c.contentChanged = c.contentChanged || content
		} else {
			c.unchanged++ // its linkage may still be rewritten
		}
		if linkage {
			c.relinked[row.ID] = true
		}
		if content || linkage || cur.Deleted {
			c.changed = append(c.changed, lr)
		}
	}
	return c
}
