package accounts

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// of the package rendered for schema usersync, true.
func TestStatementsGolden(t *testing.T) {
	q, err := newStatements("usersync_river")
	if err != nil {
		t.Fatal(err)
	}
	u, err := newUnionStatements()
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse/accounts")
	g.Add("accounts", q)
	g.Add("union", u)
	own, err := newOwnerStatements()
	if err != nil {
		t.Fatal(err)
	}
	g.Add("owner", own)
	g.Check(t, *update)
}

func newRegistry(t *testing.T, pool *pgxpool.Pool, migrate bool) (*Registry, string) {
	t.Helper()
	ctx := context.Background()
	name := schematest.NewSchemaName(t, pool)
	river := name + "_river"
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+river+`"`); err != nil {
		t.Fatal(err)
	}
	r, err := New(pool, river)
	if err != nil {
		t.Fatal(err)
	}
	if migrate {
		for i := 0; i < 2; i++ { // twice: it is idempotent
			if err := r.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r, name
}

// TestRegistry: add, list, get, update, pause, resume and remove, and the
// refusals: a taken name, a taken schema, an unknown account, a bad name.
func TestRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	r, _ := newRegistry(t, pool, false)
	if got, err := r.List(ctx); err != nil || got != nil {
		t.Fatalf("List before migrate = %v, %v; want none", got, err)
	}
	if _, err := r.Get(ctx, "eu"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get before migrate: %v", err)
	}
	if err := r.Add(ctx, Account{Name: "eu", Settings: map[string]string{SchemaSetting: "s_eu"}}); !errors.Is(err, ErrNoRegistry) {
		t.Fatalf("Add before migrate: %v", err)
	}
	if err := r.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	eu := Account{Name: "eu", Settings: map[string]string{SchemaSetting: "s_eu", "USERSYNC_API_TOKEN": "tok"}}
	if err := r.Add(ctx, eu); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a    Account
		want error
	}{
		{Account{Name: "eu", Settings: map[string]string{SchemaSetting: "s_other"}}, ErrNameTaken},
		{Account{Name: "us", Settings: map[string]string{SchemaSetting: "s_eu"}}, ErrSchemaTaken},
	} {
		if err := r.Add(ctx, tc.a); !errors.Is(err, tc.want) {
			t.Errorf("Add %+v: %v, want %v", tc.a.Name, err, tc.want)
		}
	}
	for _, bad := range []string{"default", "EU", "1eu", "e-u", "", strings.Repeat("a", 41)} {
		if err := r.Add(ctx, Account{Name: bad, Settings: map[string]string{SchemaSetting: "s_" + bad}}); err == nil {
			t.Errorf("Add %q: no error", bad)
		}
	}
	if err := r.UpdateSettings(ctx, "eu", map[string]string{"USERSYNC_PAGE_SIZE": "10", SchemaSetting: "moved"}); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateSettings(ctx, "eu", map[string]string{"USERSYNC_PII_KEY_FILE": "/k"}, "USERSYNC_PII_KEY", SchemaSetting); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get(ctx, "eu"); got.Settings["USERSYNC_PII_KEY"] != "" || got.Settings["USERSYNC_PII_KEY_FILE"] != "/k" || got.Schema() != "s_eu" {
		t.Fatalf("after removing a setting: %v", got.Settings)
	}
	if err := r.Pause(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, "eu")
	if err != nil || !got.Paused() || got.Schema() != "s_eu" || got.Settings["USERSYNC_PAGE_SIZE"] != "10" || got.Settings["USERSYNC_API_TOKEN"] != "tok" {
		t.Fatalf("after update and pause: %+v %v", got, err)
	}
	if err := r.Resume(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	if list, err := r.List(ctx); err != nil || len(list) != 1 || list[0].Paused() {
		t.Fatalf("List after resume = %+v, %v", list, err)
	}
	for _, f := range []func(context.Context, string) error{r.Pause, r.Resume, r.Remove} {
		if err := f(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown account: %v", err)
		}
	}
	if err := r.Remove(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	if list, err := r.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List after remove = %+v, %v", list, err)
	}
}

// TestUnionViews: every analysts' table gets a view uniting the members'
// tables with the account first; a column one member lacks reads NULL; one
// member drops the views; a foreign schema of that name is left alone.
func TestUnionViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	a, b := schematest.NewSchemaName(t, pool), schematest.NewSchemaName(t, pool)
	union := UnionSchema(a)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+union+`" CASCADE`) })
	for _, s := range []string{a, b} {
		if err := warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
			_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: s})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO "`+a+`".teams (id, name, raw) VALUES (1, 'a team', '{}');
		INSERT INTO "`+b+`".teams (id, name, raw) VALUES (1, 'b team', '{}');
		ALTER TABLE "`+b+`".teams DROP COLUMN name CASCADE`); err != nil {
		t.Fatal(err)
	}
	members := []Member{{"default", a}, {"eu", b}}
	if err := RefreshUnion(ctx, pool, union, "", members); err != nil {
		t.Fatal(err)
	}
	// Views that are the members' already are left as they are.
	u := Union{Schema: union, Members: func(context.Context) ([]Member, error) { return members, nil }}
	for _, refresh := range []func(context.Context, *pgxpool.Pool) (bool, error){u.Refresh, u.RefreshIfStale} {
		if changed, err := refresh(ctx, pool); err != nil || changed {
			t.Errorf("refreshing current views: changed %v, %v", changed, err)
		}
	}
	rows, err := pool.Query(ctx, `SELECT account, id, name FROM "`+union+`".teams ORDER BY account`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var acc string
		var id int64
		var name *string
		if err := rows.Scan(&acc, &id, &name); err != nil {
			t.Fatal(err)
		}
		n := "NULL"
		if name != nil {
			n = *name
		}
		got = append(got, acc+"/"+n)
	}
	if rows.Err() != nil || strings.Join(got, ",") != "default/a team,eu/NULL" {
		t.Fatalf("union of teams = %v %v", got, rows.Err())
	}
	var invoker bool
	if err := pool.QueryRow(ctx, `SELECT 'security_invoker=true' = ANY(reloptions) FROM pg_class
		WHERE oid = to_regclass($1)`, `"`+union+`".users`).Scan(&invoker); err != nil || !invoker {
		t.Errorf("users view is not security_invoker: %v %v", invoker, err)
	}
	if err := RefreshUnion(ctx, pool, union, "", members[:1]); err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, union).Scan(&exists); err != nil || exists {
		t.Fatalf("one member left the union schema: %v %v", exists, err)
	}
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+union+`"`); err != nil {
		t.Fatal(err)
	}
	if err := RefreshUnion(ctx, pool, union, "", members); err == nil || !strings.Contains(err.Error(), "not usersync's") {
		t.Fatalf("a foreign schema: %v", err)
	}
	// A single account (every migrate of a deployment without accounts)
	// leaves a foreign schema of that name alone, without an error.
	if err := RefreshUnion(ctx, pool, union, "", members[:1]); err != nil {
		t.Fatalf("one member beside a foreign schema: %v", err)
	}
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, union).Scan(&exists); err != nil || !exists {
		t.Fatalf("the foreign schema was dropped: %v %v", exists, err)
	}
}

// TestRegistryHeads: the heads carry each account's schema, pause and the
// stamp of its settings, which changes with them and only with them; a
// registry never made has none, and no head of any name.
func TestRegistryHeads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	r, _ := newRegistry(t, pool, false)
	if h, err := r.Heads(ctx); err != nil || h != nil {
		t.Fatalf("Heads before migrate = %v, %v; want none", h, err)
	}
	if _, err := r.Head(ctx, "eu"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Head before migrate: %v", err)
	}
	if _, ok, err := r.SinceChange(ctx); err != nil || ok {
		t.Fatalf("SinceChange before migrate: %v, %v; want none", ok, err)
	}
	if err := r.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(ctx, Account{Name: "eu", Settings: map[string]string{SchemaSetting: "s_eu", "USERSYNC_PAGE_SIZE": "10"}}); err != nil {
		t.Fatal(err)
	}
	a, err := r.Get(ctx, "eu")
	if err != nil {
		t.Fatal(err)
	}
	if since, ok, err := r.SinceChange(ctx); err != nil || !ok || since < 0 || since > time.Minute {
		t.Errorf("SinceChange just after an add: %s, %v, %v", since, ok, err)
	}
	heads, err := r.Heads(ctx)
	if err != nil || len(heads) != 1 || heads[0] != (Head{Name: "eu", Schema: "s_eu", Stamp: a.Stamp}) || a.Stamp == "" {
		t.Fatalf("Heads = %+v, %v; Get's stamp %q", heads, err, a.Stamp)
	}
	if err := r.Pause(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	if h, err := r.Head(ctx, "eu"); err != nil || !h.Paused || h.Stamp != a.Stamp {
		t.Errorf("Head of paused eu = %+v, %v; want paused, the same stamp", h, err)
	}
	if err := r.UpdateSettings(ctx, "eu", map[string]string{"USERSYNC_PAGE_SIZE": "20"}); err != nil {
		t.Fatal(err)
	}
	if h, err := r.Head(ctx, "eu"); err != nil || h.Stamp == a.Stamp {
		t.Errorf("Head after a change of settings = %+v, %v; want a new stamp", h, err)
	}
	if _, err := r.Head(ctx, "us"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Head of an unknown account: %v", err)
	}
}

// TestRegistryListsAHandEditedRow: a row whose settings someone edited by
// hand into values that are not strings is still listed, with the settings
// that are strings and an error naming the others, so that whoever lists
// every account goes on for the rest; Get returns it with that error, and
// setting those values again as strings mends it.
func TestRegistryListsAHandEditedRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	r, name := newRegistry(t, pool, true)
	riverSchema := name + "_river"
	for _, name := range []string{"ap", "eu"} {
		if err := r.Add(ctx, Account{Name: name, Settings: map[string]string{SchemaSetting: "s_" + name, "USERSYNC_PAGE_SIZE": "10"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE "`+riverSchema+`".accounts SET settings = settings || '{"USERSYNC_PAGE_SIZE": 10, "USERSYNC_WORKERS": [2]}' WHERE name = 'eu'`); err != nil {
		t.Fatal(err)
	}
	list, err := r.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List beside eu's hand-edited row: %d accounts, %v", len(list), err)
	}
	if list[0].Invalid != nil {
		t.Errorf("ap is valid, yet Invalid = %v", list[0].Invalid)
	}
	eu := list[1]
	if eu.Invalid == nil || !slices.Equal(eu.Invalid.Keys, []string{"USERSYNC_PAGE_SIZE", "USERSYNC_WORKERS"}) || eu.Schema() != "s_eu" {
		t.Fatalf("eu listed as %+v; want its schema, and its page size and workers named as not strings", eu)
	}
	msg := eu.Invalid.Error()
	for _, want := range []string{"account eu", "USERSYNC_PAGE_SIZE, USERSYNC_WORKERS", "usersync accounts set eu"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("the error %q should be one line naming %q", msg, want)
		}
	}
	if a, err := r.Get(ctx, "eu"); !errors.Is(err, ErrBadSettings) || a.Name != "eu" || a.Schema() != "s_eu" {
		t.Errorf("Get(eu) = %+v, %v; want the account and ErrBadSettings", a, err)
	}
	if err := r.UpdateSettings(ctx, "eu", map[string]string{"USERSYNC_PAGE_SIZE": "20", "USERSYNC_WORKERS": "2"}); err != nil {
		t.Fatal(err)
	}
	if a, err := r.Get(ctx, "eu"); err != nil || a.Settings["USERSYNC_PAGE_SIZE"] != "20" {
		t.Errorf("Get(eu) once mended = %+v, %v", a, err)
	}
}
