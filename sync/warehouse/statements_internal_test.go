package warehouse

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden renders every statement a Store holds (those of
// sql/*.sql and those derived from the catalog) for schema usersync and
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
	g.Check(t, *update)
}
