package dimensions

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// of the dimensions rendered for schema usersync, true.
func TestStatementsGolden(t *testing.T) {
	s, err := newStore(nil, "usersync")
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse/dimensions")
	for _, typ := range schema.DimensionTypes() {
		tab := s.tables[typ]
		g.Add(tab.Res.Table, tab)
		g.Add(tab.Res.Table+" list", s.lists[typ])
		g.Add(tab.Res.Table+" history", s.history[typ])
	}
	g.Add("teams", s.teams)
	g.Add("digests", s.digests)
	g.Check(t, *update)
}
