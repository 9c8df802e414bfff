package reconcile

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// a reconcile runs rendered for schema usersync, true.
func TestStatementsGolden(t *testing.T) {
	q, err := newStatements("usersync")
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse/reconcile")
	g.Add("reconcile", q)
	g.Check(t, *update)
}
