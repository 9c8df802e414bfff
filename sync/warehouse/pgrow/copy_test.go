package pgrow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// TestCopyUsersMatchesPgx copies the same users with the encoder (Copy)
// and with pgx's CopyFrom, which the encoder replaced, and
// finds the two tables equal in every copied column.
func TestCopyUsersMatchesPgx(t *testing.T) {
	t.Parallel()
	pool, name := warehousetest.Migrated(t, "")
	q := schema.QuoteIdentifier(name)
	ctx := context.Background()
	for _, table := range []string{"users_binary", "users_pgx"} {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %[1]s.%[2]s (LIKE %[1]s.users INCLUDING DEFAULTS)`, q, table)); err != nil {
			t.Fatal(err)
		}
	}
	rows := warehousetest.Rows(t, schema.User(), warehousetest.EdgeUsers)
	users, err := pgrow.NewTable(name, schema.User())
	if err != nil {
		t.Fatal(err)
	}
	links := pgrow.NewLinks(schema.User())
	load := make([]pgrow.Row, len(rows))
	for i := range rows {
		load[i] = pgrow.Row{Normalized: rows[i], Content: rows[i].Hash(), Linkage: rows[i].LinkageHash(), Links: links.Values(&rows[i])}
	}
	copySQL := strings.Replace(users.CopyTable, q+`."users"`, q+".users_binary", 1)
	for from := 0; from < len(load); from += 2 { // two rows a COPY: a batch boundary inside the page
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := pgrow.Copy(ctx, tx, copySQL, &users, load[from:min(from+2, len(load))], pgrow.Writer{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The values by column name, from the catalog: not in the encoder's order.
	src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		l := links.Values(r)
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
	err = pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.users_binary),
		(SELECT count(*) FROM ((SELECT %[2]s FROM %[1]s.users_binary EXCEPT ALL SELECT %[2]s FROM %[1]s.users_pgx)
			UNION ALL (SELECT %[2]s FROM %[1]s.users_pgx EXCEPT ALL SELECT %[2]s FROM %[1]s.users_binary)) d)`, q, cols)).Scan(&n, &differ)
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
		FROM %s.users_binary WHERE id = 1`, q)).Scan(&ok)
	if err != nil || !ok {
		t.Errorf("user 1 not as sent: %v", err)
	}
}
