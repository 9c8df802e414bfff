package accounts

import (
	"context"
	"errors"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// TestDropAccountSchema: objects of the schema that depend on each other
// (a view over a table, a sequence a column owns, a type) are dropped one by
// one; a foreign key of a table outside it refuses the drop even with
// cascade, naming it, and nothing changes; a view outside it is dropped only
// with cascade, and never when it is in a schema to keep.
func TestDropAccountSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	r, _ := newRegistry(t, pool, true)
	s, other := schematest.NewSchemaName(t, pool), schematest.NewSchemaName(t, pool)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+s+`"; CREATE SCHEMA "`+other+`";
		CREATE TYPE "`+s+`".mood AS ENUM ('ok');
		CREATE TABLE "`+s+`".users (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, m "`+s+`".mood);
		CREATE VIEW "`+s+`".a_view AS SELECT id FROM "`+s+`".users;
		CREATE TABLE "`+other+`".refs (user_id bigint REFERENCES "`+s+`".users (id))`); err != nil {
		t.Fatal(err)
	}
	var de *DependentsError
	if _, err := r.DropAccountSchema(ctx, s, true); !errors.As(err, &de) || !de.Undroppable || len(de.Dependents) != 1 || de.Dependents[0].Kind != "table constraint" {
		t.Fatalf("drop with a foreign key outside: %v; want a DependentsError naming the constraint", err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE "`+other+`".refs; CREATE VIEW "`+other+`".v AS SELECT id FROM "`+s+`".a_view`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DropAccountSchema(ctx, s, false); !errors.As(err, &de) || de.Undroppable || de.Dependents[0].Name != other+".v" {
		t.Fatalf("drop with a view outside, without cascade: %v", err)
	}
	if _, err := r.DropAccountSchema(ctx, s, true, other); !errors.As(err, &de) {
		t.Fatalf("drop with a view in a schema to keep: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ($1, $2)`, s, other).Scan(&n); err != nil || n < 4 {
		t.Fatalf("a refused drop changed something: %d relations left, %v", n, err)
	}
	dropped, err := r.DropAccountSchema(ctx, s, true)
	if err != nil || len(dropped) != 1 || dropped[0].String() != "view "+other+".v" {
		t.Fatalf("drop with cascade = %v, %v", dropped, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, s).Scan(&n); err != nil || n != 0 {
		t.Errorf("schema %s is still there (%d), %v", s, n, err)
	}
}
