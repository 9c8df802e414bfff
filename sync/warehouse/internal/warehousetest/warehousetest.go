package warehousetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/jsondoc"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// Migrated returns a pool and a schema of the test's own, migrated (with
// role as its reader role, when not empty); the schema is dropped when the
// test ends.
func Migrated(t testing.TB, role string) (*pgxpool.Pool, string) {
	t.Helper()
	pool := schematest.NewPool(t, 8)
	name := schematest.NewSchemaName(t, pool)
	ctx := context.Background()
	err := warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
		_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name, ReaderRole: role})
		return err
	})
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return pool, name
}

// MigratedOn is Migrated on pool, without the migration lock (which holds a
// connection of its own): pool may have one connection.
func MigratedOn(t testing.TB, pool *pgxpool.Pool, role string) (*pgxpool.Pool, string) {
	t.Helper()
	name := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name, ReaderRole: role}); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return pool, name
}

// NewStore is a Store on a migrated schema of the test's own.
func NewStore(t testing.TB) *warehouse.Store {
	t.Helper()
	pool, name := Migrated(t, "")
	s, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rows normalizes the resources of a JSON:API document's data as res.
func Rows(t testing.TB, res schema.Resource, body string) []normalize.Row {
	t.Helper()
	doc, err := jsondoc.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	n := normalize.New(res)
	var out []normalize.Row
	for _, r := range doc.Data {
		row, err := n.Row(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
	return out
}

// User is a user resource: its title, teams and role relationships (JSON
// values of "data"), a mailbox 100+id and an updatedAt in January 2024 that
// grows with id.
func User(id int, title string, teams string, role string) string {
	return fmt.Sprintf(`{"id": %d, "type": "user", "attributes": {"title": %q, "updatedAt": "2024-01-0%dT00:00:00.000Z", "locked": false},
		"relationships": {"role": %s, "teams": %s, "mailboxes": {"data": [{"id": %d, "type": "mailbox"}]}}}`, id, title, id, role, teams, 100+id)
}

// Count runs sql, a count with %s for the quoted schema, in s's schema.
func Count(t testing.TB, s *warehouse.Store, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.Pool().QueryRow(context.Background(), fmt.Sprintf(sql, `"`+s.Schema()+`"`), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// EdgeUsers is a users document of edge cases: the extremes of a 64-bit id
// view, text beyond ASCII, an empty string, microsecond times in another
// zone, duplicate and unknown relationships, a relationship of a type not in
// the catalog, an attribute not in the catalog, null and empty meta.
const EdgeUsers = `{"data": [
	{"id": 1, "type": "user",
	 "attributes": {"accountsViewId": 9223372036854775807, "locked": false, "notificationsEnabled": true, "title": "Zoë ✓ 東京",
		"firstName": "", "createdAt": "1999-12-31T23:59:59.999999Z", "updatedAt": "2024-02-29T23:59:59.123456+05:30",
		"duties": {"a": [1, 2], "é": null}, "notInTheCatalog": 5},
	 "relationships": {"role": {"data": {"id": 5, "type": "role"}}, "profile": {"data": null},
		"teams": {"data": [{"id": 10, "type": "team"}, {"id": 10, "type": "team"}]},
		"mailboxes": {"data": [{"id": 3, "type": "mailbox"}, {"id": 4, "type": "mailbox"}, {"id": 3, "type": "mailbox"}]},
		"contentCategories": {"data": []}, "recipients": {"data": [{"id": 7, "type": "somethingElse"}]},
		"notInTheCatalogEither": {"data": [{"id": 8, "type": "x"}]}},
	 "meta": {"dataConnections": [{"provider": "salesforce", "connected": true}]}},
	{"id": 2, "type": "user", "attributes": {"accountsViewId": -9223372036854775808, "duties": [], "title": null, "locked": true}},
	{"id": 3, "type": "user", "attributes": {}, "relationships": {}, "meta": {"dataConnections": null}}
]}`
