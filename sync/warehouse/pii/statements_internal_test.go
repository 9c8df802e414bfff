package pii

import (
	"flag"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden renders the personal-data statements for
// schema usersync and a policy hashing email and dropping phoneNumber, and
// compares them with testdata/statements.golden.sql (-update rewrites it).
func TestStatementsGolden(t *testing.T) {
	p, err := normalize.NewPolicy(schema.User(), normalize.PolicyConfig{Hash: []string{"email"}, Drop: []string{"phoneNumber"},
		Key: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	q, err := newPersonalSQL("usersync", p)
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse/pii")
	g.Add("personal", q)
	g.Check(t, *update)
}
