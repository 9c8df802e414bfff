package warehouse

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden renders every statement of the package (those of
// sql/*.sql, a Store's and the migration runner's, and those derived from
// the catalog) for schema usersync and
// compares them with testdata/statements.golden.sql, so the SQL the program
// runs can be read, diffed in review and EXPLAINed without running it.
// go test ./sync/warehouse -run TestStatementsGolden -update rewrites it.
func TestStatementsGolden(t *testing.T) {
	s, err := NewStore(nil, "usersync")
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse")
	g.Add("runs", s.runs.sql)
	g.Add("locks", s.locks)
	m, err := newMigrateSQL("usersync")
	if err != nil {
		t.Fatal(err)
	}
	g.Add("migrate", m)
	// The batches migrate derives from the catalog, for reader role usersync_reader.
	g.Add("migrate.rendered", struct{ Comments, Grants string }{m.comments(), m.grants("usersync_reader")})
	r, err := newReadersSQL("usersync")
	if err != nil {
		t.Fatal(err)
	}
	g.Add("readers", r)
	g.Add("readers.rendered", struct{ Revokes string }{r.revokes("usersync_reader")})
	g.Check(t, *update)
}
