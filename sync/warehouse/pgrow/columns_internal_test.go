package pgrow

import (
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgcopy"
)

// TestCopyColumnTypes checks the type of every column the encoder writes:
// the catalog's, and the one the encoder assumes for the columns it writes
// without looking (ids, raw, hashes, linkage); and that the columns are
// every column of the catalog's table but those the database fills.
func TestCopyColumnTypes(t *testing.T) {
	t.Parallel()
	filled := map[string]bool{"synced_at": true, "deleted_at": true, "version_id": true, "version_valid_from": true}
	for _, res := range schema.Resources() {
		tsql, err := NewTable("s", res)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]pgcopy.Type{"id": pgcopy.Bigint, "raw": pgcopy.JSONB, "content_hash": pgcopy.Bytea, "linkage_hash": pgcopy.Bytea,
			"data_connections": pgcopy.JSONB, "version_run_id": pgcopy.Bigint, "other_relationships": pgcopy.JSONB}
		for _, rel := range res.ToOne() {
			want[rel.Column()] = pgcopy.Bigint
		}
		for _, rel := range res.ArrayLinks() {
			want[rel.Column()] = pgcopy.BigintArray
		}
		written := map[string]bool{}
		for _, c := range tsql.Cols {
			written[c.name] = true
			if c.typ == pgcopy.Unknown {
				t.Errorf("%s.%s: no binary encoding", res.Table, c.name)
			}
			if w, ok := want[c.name]; ok && c.typ != w {
				t.Errorf("%s.%s: catalog type %s, the encoder writes %s", res.Table, c.name, c.typ, w)
			}
		}
		cat, _ := schema.TableNamed(res.Table)
		for _, c := range cat.Columns {
			if !written[c.Name] && !filled[c.Name] {
				t.Errorf("%s.%s: in the catalog, written by no COPY", res.Table, c.Name)
			}
		}
		if len(written) != len(tsql.Cols) {
			t.Errorf("%s: a column is written twice", res.Table)
		}
	}
}
