package users

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// of the users load rendered for schema usersync, true.
func TestStatementsGolden(t *testing.T) {
	s, err := newStore(nil, "usersync")
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse/users")
	g.Add("users", s.sql)
	g.Add("users table", s.table)
	g.Add("rehash users", s.rehash.Users)
	g.Check(t, *update)
}
