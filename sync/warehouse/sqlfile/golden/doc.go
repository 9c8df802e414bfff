// Package golden keeps a warehouse package's testdata/statements.golden.sql:
// every statement the package runs, rendered for schema usersync, so the
// SQL the program runs can be read, diffed in review and EXPLAINed without
// running it.
//
//	var update = flag.Bool("update", false, "rewrite "+golden.File)
//
//	func TestStatementsGolden(t *testing.T) {
//		q, err := newStatements("usersync")
//		if err != nil {
//			t.Fatal(err)
//		}
//		g := golden.New("./sync/warehouse/users")
//		g.Add("users", q)
//		g.Check(t, *update) // go test ./PKG -run Golden -update rewrites it
//	}
package golden
