package snapshot

import (
	"flag"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// a snapshot runs rendered for schema usersync, true: those of
// sql/snapshot.sql, then the query reading each snapshot table, derived from
// the catalog, and examples of the queries of each kind of chunk and of a reader's
// import of the snapshot.
func TestStatementsGolden(t *testing.T) {
	q, err := newStatements("usersync")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := snapshotTables(nil)
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	var chunks [3]string
	for _, tbl := range tables {
		read, _ := q.reading(tbl, chunk{kind: wholeTable})
		reads = append(reads, read)
		switch tbl.Name {
		case "users":
			chunks[0], _ = q.reading(tbl, ctidChunks(1000, 4)[1])
		case "users_current":
			keys := keyChunks("id", 1, 1000, 4)
			chunks[1], _ = q.reading(tbl, keys[0])
			chunks[2], _ = q.reading(tbl, keys[2])
		}
	}
	g := golden.New("./sync/snapshot")
	g.Add("snapshot", q)
	g.Add("snapshot.rendered", struct{ Tables, UsersChunk, UsersCurrentNullChunk, UsersCurrentChunk, Import string }{
		strings.Join(reads, ";\n"), chunks[0], chunks[1], chunks[2], q.importing("00000003-00000002-1"),
	})
	g.Check(t, *update)
}
