package users

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// TestClassify compares pages with stored users without a database: new,
// unchanged, changed content, changed linkage, come back after deletion;
// and rows that left linkage unsent are completed from what is stored, on
// a copy, keeping the stored version's hash.
func TestClassify(t *testing.T) {
	t.Parallel()
	links := pgrow.NewLinks(schema.User())
	const full = `{"id": %d, "type": "user", "attributes": {"title": %q, "updatedAt": "2024-01-01T00:00:00.000Z"},
		"relationships": {"role": {"data": {"id": 5, "type": "role"}}, "teams": {"data": [{"id": 7, "type": "team"}]},
		"mailboxes": {"data": [{"id": 3, "type": "mailbox"}]}}, "meta": {"dataConnections": {"x": 1}}}`
	page := func(body string) []normalize.Row { return warehousetest.Rows(t, schema.User(), `{"data": [`+body+`]}`) }
	stored := map[int64]pgrow.Stored{}
	keep := func(r normalize.Row, deleted bool) {
		stored[r.ID] = pgrow.Stored{Hash: r.Hash(), Linkage: r.LinkageHash(), Deleted: deleted}
	}
	before := page(fmt.Sprintf(full, 1, "a") + "," + fmt.Sprintf(full, 2, "b") + "," + fmt.Sprintf(full, 3, "c") + "," + fmt.Sprintf(full, 4, "d"))
	for _, r := range before {
		keep(r, r.ID == 4)
	}
	teams := `{"id": 3, "type": "user", "attributes": {"title": "c", "updatedAt": "2024-01-01T00:00:00.000Z"},
		"relationships": {"role": {"data": {"id": 5, "type": "role"}}, "teams": {"data": [{"id": 8, "type": "team"}]},
		"mailboxes": {"data": [{"id": 3, "type": "mailbox"}]}}, "meta": {"dataConnections": {"x": 1}}}`
	rows := page(fmt.Sprintf(full, 1, "a") + "," + fmt.Sprintf(full, 2, "B") + "," + teams + "," + fmt.Sprintf(full, 4, "d") + "," + fmt.Sprintf(full, 5, "e"))
	c := classify(rows, stored, links)
	ids := func(lr []pgrow.Row) (out []int64) {
		for _, r := range lr {
			out = append(out, r.Normalized.ID)
		}
		return out
	}
	if got := ids(c.fresh); !slices.Equal(got, []int64{5}) {
		t.Errorf("fresh %v, want [5]", got)
	}
	if got := ids(c.changed); !slices.Equal(got, []int64{2, 3, 4}) {
		t.Errorf("changed %v, want [2 3 4]", got)
	}
	if c.unchanged != 2 || c.updated != 2 || !c.contentChanged || !c.relinked[3] || c.relinked[2] || len(c.relinked) != 1 {
		t.Errorf("unchanged %d, updated %d, contentChanged %v, relinked %v; want 2 (1 and 3), 2 (2 and 4), true, {3}", c.unchanged, c.updated, c.contentChanged, c.relinked)
	}

	// User 1 sends neither its role, its mailboxes nor its data connections:
	// the stored ones complete it, and it is unchanged.
	bare := page(`{"id": 1, "type": "user", "attributes": {"title": "a", "updatedAt": "2024-01-01T00:00:00.000Z"},
		"relationships": {"teams": {"data": [{"id": 7, "type": "team"}]}}}`)
	role, mailboxes := int64(5), []int64{3}
	arrays := make([][]int64, len(schema.User().ArrayLinks()))
	for k, rel := range schema.User().ArrayLinks() {
		if rel.Name == "mailboxes" {
			arrays[k] = mailboxes
		}
	}
	cur := stored[1]
	toOne := make([]*int64, len(schema.User().ToOne()))
	toOne[0] = &role // role, the first to-one
	cur.Fill = &pgrow.Fill{ToOne: toOne, DataConnections: []byte(`{"x": 1}`), Arrays: arrays}
	stored[1] = cur
	sent := bare[0]
	c = classify(bare, stored, links)
	if c.unchanged != 1 || len(c.changed) != 0 {
		t.Errorf("a row completed from the warehouse: unchanged %d, changed %d; want unchanged", c.unchanged, len(c.changed))
	}
	if bare[0].ToOne[0].Valid || bare[0].DataConnections != nil || len(bare[0].Links) != 0 || !bytes.Equal(bare[0].Hash(), sent.Hash()) {
		t.Error("classify changed the caller's row")
	}
}
