package jobs

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// usersync runs on River's tables rendered for River schema usersync_river,
// true.
func TestStatementsGolden(t *testing.T) {
	q, err := newStatements(RiverSchema("usersync"))
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./jobs")
	g.Add("jobs", q)
	g.Check(t, *update)
}
