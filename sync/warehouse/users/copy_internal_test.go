package users

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/jsondoc"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/pgrow"
)

func copyPool(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	err := warehouse.WithMigrationLock(context.Background(), pool, func(ctx context.Context) error {
		_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name})
		return err
	})
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return pool, name
}

// copyStore is a Store on a migrated schema of its own (see copyPool).
func copyStore(t *testing.T) (*Store, *pgxpool.Pool, string) {
	t.Helper()
	pool, name := copyPool(t)
	s, err := newStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool, name
}

const fullUsers = `{"data": [
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

func normalized(t *testing.T, res schema.Resource, body string) []normalize.Row {
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

// TestCopyUsersMatchesPgx copies the same users with the encoder
// (CopyUsersRaw) and with pgx's CopyFrom, which the encoder replaced, and
// finds the two tables equal in every copied column.
func TestCopyUsersMatchesPgx(t *testing.T) {
	t.Parallel()
	s, pool, name := copyStore(t)
	ctx := context.Background()
	for _, table := range []string{"users_binary", "users_pgx"} {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %[1]s.%[2]s (LIKE %[1]s.users INCLUDING DEFAULTS)`, s.q, table)); err != nil {
			t.Fatal(err)
		}
	}
	rows := normalized(t, schema.User(), fullUsers)
	if _, err := s.CopyUsersRaw(ctx, "users_binary", rows, 2); err != nil {
		t.Fatal(err)
	}
	users := s.table
	// The values by column name, from the catalog: not in the encoder's order.
	src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		l := s.links.Values(r)
		by := map[string]any{"id": r.ID, "raw": r.Raw, "content_hash": r.Hash(), "linkage_hash": r.LinkageHash(),
			"data_connections": r.DataConnections, "version_run_id": nil, "other_relationships": l.Other, "pii_policy_id": nil}
		for j, a := range schema.User().Attributes {
			by[a.Column()] = r.Values[j]
		}
		for j, rel := range schema.User().ToOne() {
			by[rel.Column()] = nil
			if o := r.ToOne[j]; o.Valid {
				by[rel.Column()] = o.ID
			}
		}
		for k, rel := range schema.User().ArrayLinks() {
			by[rel.Column()] = l.Arrays[k]
		}
		v := make([]any, len(users.Columns))
		for j, c := range users.Columns {
			var ok bool
			if v[j], ok = by[c]; !ok {
				return nil, fmt.Errorf("no value for column %s", c)
			}
		}
		return v, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{name, "users_pgx"}, users.Columns, src); err != nil {
		t.Fatal(err)
	}
	cols := strings.Join(pgrow.QuoteAll(users.Columns), ", ")
	var n, differ int64
	err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.users_binary),
		(SELECT count(*) FROM ((SELECT %[2]s FROM %[1]s.users_binary EXCEPT ALL SELECT %[2]s FROM %[1]s.users_pgx)
			UNION ALL (SELECT %[2]s FROM %[1]s.users_pgx EXCEPT ALL SELECT %[2]s FROM %[1]s.users_binary)) d)`, s.q, cols)).Scan(&n, &differ)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(rows)) || differ != 0 {
		t.Errorf("%d rows copied, %d differ from pgx's", n, differ)
	}
	// The rows hold what the test means them to: the edge cases are there.
	var ok bool
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT accounts_view_id = 9223372036854775807 AND NOT locked AND title = 'Zoë ✓ 東京'
		AND first_name = '' AND created_at = '1999-12-31T23:59:59.999999Z' AND updated_at = '2024-02-29T18:29:59.123456Z'
		AND duties = '{"a": [1, 2], "é": null}' AND role_id = 5 AND profile_id IS NULL AND mailbox_ids = '{3,4}'
		AND content_category_ids = '{}' AND recipient_ids = '{}' AND direct_assigned_team_ids IS NULL
		AND other_relationships ? 'notInTheCatalogEither' AND data_connections IS NOT NULL AND version_run_id IS NULL
		FROM %s.users_binary WHERE id = 1`, s.q)).Scan(&ok)
	if err != nil || !ok {
		t.Errorf("user 1 not as sent: %v", err)
	}
}

// TestCopyWrongGoType loads rows holding a value of a Go type normalize never
// gives: the load fails with an error naming the column, and the store stays
// usable.
func TestCopyWrongGoType(t *testing.T) {
	t.Parallel()
	s, _, _ := copyStore(t)
	ctx := context.Background()
	title := -1
	for i, a := range schema.User().Attributes {
		if a.Name == "title" {
			title = i
		}
	}
	rows := normalized(t, schema.User(), fullUsers)
	rows[1].Values[title] = 42
	_, err := s.Write(ctx, rows, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "copying new users: encoding user 2, column title: a Go int cannot be written as text") {
		t.Errorf("wrong Go type: %v", err)
	}
	rows = normalized(t, schema.User(), fullUsers)
	rows[0].Values = rows[0].Values[:3]
	if _, err = s.Write(ctx, rows, nil, nil); err == nil || !strings.Contains(err.Error(), "encoding user 1: 3 attributes") {
		t.Errorf("missing values: %v", err)
	}
	c, err := s.Write(ctx, normalized(t, schema.User(), fullUsers), nil, nil)
	if err != nil || c.Inserted != 3 {
		t.Errorf("load after the failures: %+v, %v", c, err)
	}
}

func TestDedupePairs(t *testing.T) {
	t.Parallel()
	got := dedupePairs([][2]int64{{1, 10}, {1, 11}, {1, 10}, {2, 10}, {1, 11}})
	if want := [][2]int64{{1, 10}, {1, 11}, {2, 10}}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
