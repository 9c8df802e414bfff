package accounts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// migratedSchemas makes n migrated schemas with a team each, and the union
// views' schema name of the first, dropped at the end.
func migratedSchemas(t *testing.T, pool *pgxpool.Pool, n int) ([]string, string) {
	t.Helper()
	ctx := context.Background()
	var out []string
	for i := 0; i < n; i++ {
		s := schematest.NewSchemaName(t, pool)
		if err := warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
			_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: s})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO "`+s+`".teams (id, name, raw) VALUES (1, 'team of `+s+`', '{}')`); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	union := UnionSchema(out[0])
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+union+`" CASCADE`) })
	return out, union
}

// TestUnionViewsKeepDependents: analysts' views and materialized views over
// the union views survive every refresh, as accounts come and go; a refresh
// that would drop a union view they depend on (no account left, a column
// whose type changed) stops and names them, and drops nothing.
func TestUnionViewsKeepDependents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	s, union := migratedSchemas(t, pool, 3)
	dep := schematest.NewSchemaName(t, pool)
	m := []Member{{"default", s[0]}, {"eu", s[1]}, {"us", s[2]}}
	if err := RefreshUnion(ctx, pool, union, "", m[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+dep+`";
		CREATE VIEW "`+dep+`".teams_v AS SELECT account, id, name FROM "`+union+`".teams;
		CREATE MATERIALIZED VIEW "`+dep+`".users_m AS SELECT account, id FROM "`+union+`".users`); err != nil {
		t.Fatal(err)
	}
	answers := func(want int) {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+dep+`".teams_v`).Scan(&n); err != nil || n != want {
			t.Fatalf("the analysts' view answers %d rows, %v; want %d", n, err, want)
		}
		if _, err := pool.Exec(ctx, `REFRESH MATERIALIZED VIEW "`+dep+`".users_m`); err != nil {
			t.Fatalf("refreshing the analysts' materialized view: %v", err)
		}
	}
	answers(2)
	for _, c := range []struct {
		members []Member
		rows    int
	}{{m, 3}, {[]Member{m[0], m[2]}, 2}, {m[:2], 2}} {
		if err := RefreshUnion(ctx, pool, union, "", c.members); err != nil {
			t.Fatalf("refreshing for %d members: %v", len(c.members), err)
		}
		answers(c.rows)
	}
	err := RefreshUnion(ctx, pool, union, "", m[:1])
	var de *ViewDependentsError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "view "+dep+".teams_v") ||
		!strings.Contains(err.Error(), "materialized view "+dep+".users_m") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("dropping the views under analysts' views: %v; want one line naming both", err)
	}
	answers(2)

	// A column whose type changes cannot be replaced in place: the view is
	// made again when nothing depends on it, and not while something does.
	if _, err := pool.Exec(ctx, `DROP VIEW "`+dep+`".teams_v;
		DROP VIEW "`+union+`".roles;
		CREATE VIEW "`+union+`".roles AS SELECT 'x'::text AS account, 1::int AS id;
		COMMENT ON VIEW "`+union+`".roles IS '`+viewMark+` an older one'`); err != nil {
		t.Fatal(err)
	}
	if err := RefreshUnion(ctx, pool, union, "", m); err != nil {
		t.Fatalf("a column's type changed, nothing depends on the view: %v", err)
	}
	if _, err := pool.Exec(ctx, `DROP VIEW "`+union+`".roles;
		CREATE VIEW "`+union+`".roles AS SELECT 'x'::text AS account, 1::int AS id;
		COMMENT ON VIEW "`+union+`".roles IS '`+viewMark+` an older one';
		CREATE VIEW "`+dep+`".roles_v AS SELECT id FROM "`+union+`".roles`); err != nil {
		t.Fatal(err)
	}
	if err := RefreshUnion(ctx, pool, union, "", m[:2]); !errors.As(err, &de) || !strings.Contains(err.Error(), "view "+dep+".roles_v") {
		t.Fatalf("a column's type changed under an analysts' view: %v", err)
	}
}

// TestUnionViewsFollowGrants: with a reader role, each view holds only the
// accounts' tables and columns that role may read (a column granted alone,
// per column, leaves the others NULL), so the role reads the views without
// a refusal and learns nothing of the accounts it may not read.
func TestUnionViewsFollowGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	s, union := migratedSchemas(t, pool, 3)
	role := s[0] + "_rd"
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP OWNED BY "`+role+`"`)
		_, _ = pool.Exec(context.Background(), `DROP ROLE IF EXISTS "`+role+`"`)
	})
	if _, err := pool.Exec(ctx, `CREATE ROLE "`+role+`" NOLOGIN;
		GRANT USAGE ON SCHEMA "`+s[0]+`", "`+s[1]+`" TO "`+role+`";
		GRANT SELECT ON "`+s[0]+`".teams, "`+s[0]+`".users TO "`+role+`";
		GRANT SELECT (id) ON "`+s[1]+`".teams TO "`+role+`"`); err != nil {
		t.Fatal(err)
	}
	m := []Member{{"default", s[0]}, {"eu", s[1]}, {"us", s[2]}}
	if err := RefreshUnion(ctx, pool, union, role, m); err != nil {
		t.Fatal(err)
	}
	var got string
	var roles int
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE "`+role+`"`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT string_agg(account || '/' || id || '/' || coalesce(name, 'NULL'), ',' ORDER BY account)
			FROM "`+union+`".teams`).Scan(&got); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM "`+union+`".roles`).Scan(&roles)
	})
	if err != nil || got != "default/1/team of "+s[0]+",eu/1/NULL" || roles != 0 {
		t.Fatalf("the reader reads teams %q and %d roles, %v; want default's whole, eu's id alone, nothing of us, no role", got, roles, err)
	}
}

// TestUnionViewsOfAnOlderRelease: views an older release made (no comment
// of their own) are replaced in place too, what depends on them stays, and
// they are marked as usersync's from then on.
func TestUnionViewsOfAnOlderRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	s, union := migratedSchemas(t, pool, 3)
	dep := schematest.NewSchemaName(t, pool)
	m := []Member{{"default", s[0]}, {"eu", s[1]}, {"us", s[2]}}
	if err := RefreshUnion(ctx, pool, union, "", m[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DO $$ DECLARE v text; BEGIN
		FOR v IN SELECT format('%I.%I', schemaname, viewname) FROM pg_views WHERE schemaname = '`+union+`' LOOP
			EXECUTE 'COMMENT ON VIEW ' || v || ' IS NULL';
		END LOOP; END $$;
		CREATE SCHEMA "`+dep+`"; CREATE VIEW "`+dep+`".teams_v AS SELECT * FROM "`+union+`".teams`); err != nil {
		t.Fatal(err)
	}
	if err := RefreshUnion(ctx, pool, union, "", m); err != nil {
		t.Fatalf("replacing an older release's views: %v", err)
	}
	var teams, marked int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM "`+dep+`".teams_v),
		(SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'v' AND starts_with(obj_description(c.oid, 'pg_class'), $2))`,
		union, viewMark).Scan(&teams, &marked); err != nil || teams != 3 || marked == 0 {
		t.Fatalf("after the refresh: the analysts' view reads %d teams, %d views marked, %v", teams, marked, err)
	}
}
