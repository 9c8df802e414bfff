package warehouse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestMigrationHistoryStartsAtSyncedAt migrates a warehouse of version 5 to
// the newest: every current membership starts at its user_teams.synced_at
// and every team, role and profile version at its synced_at, as migration
// 0006 says; memberships of a deleted user or team end at the deletion, and
// a deleted team's version ends at its deleted_at.
func TestMigrationHistoryStartsAtSyncedAt(t *testing.T) {
	t.Parallel()
	pool, name, s := atVersion(t, 5,
		`INSERT INTO {{schema}}.users (id, raw, content_hash, deleted_at) VALUES (1, '{}', '\x01', NULL), (2, '{}', '\x02', '2026-03-01T00:00:00Z')`,
		`INSERT INTO {{schema}}.teams (id, name, raw, synced_at, deleted_at) VALUES
			(5, 'five', '{}', '2026-01-05T00:00:00Z', NULL), (6, 'six', '{}', '2026-01-06T00:00:00Z', '2026-04-01T00:00:00Z')`,
		`INSERT INTO {{schema}}.roles (id, name, raw, synced_at) VALUES (3, 'three', '{}', '2026-01-03T00:00:00Z')`,
		`INSERT INTO {{schema}}.user_teams (user_id, team_id, synced_at) VALUES
			(1, 5, '2026-01-10T00:00:00Z'), (1, 6, '2026-01-11T00:00:00Z'), (2, 5, '2026-01-12T00:00:00Z')`)
	ctx := context.Background()
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	read := func(q string) string {
		t.Helper()
		var out string
		if err := pool.QueryRow(ctx, q).Scan(&out); err != nil {
			t.Fatalf("reading %q: %v", q, err)
		}
		return out
	}
	checks := []struct{ what, q, want string }{
		{"memberships", `SELECT string_agg(concat_ws(' ', v.user_id || '/' || v.team_id, to_char(v.valid_from AT TIME ZONE 'UTC', 'MM-DD'),
			coalesce(to_char(v.valid_to AT TIME ZONE 'UTC', 'MM-DD'), 'open'), h.ended_by), ', ' ORDER BY v.user_id, v.team_id)
			FROM ` + s + `.user_team_versions v LEFT JOIN ` + s + `.user_team_history h USING (user_id, team_id, valid_from)`,
			"1/5 01-10 open, 1/6 01-11 04-01 team_deleted, 2/5 01-12 03-01 user_deleted"},
		{"today's membership", `SELECT string_agg(user_id || '/' || team_id, ' ') FROM ` + s + `.user_teams`, "1/5"},
		{"team versions", `SELECT string_agg(concat_ws(' ', team_id, name, to_char(valid_from AT TIME ZONE 'UTC', 'MM-DD'),
			coalesce(to_char(valid_to AT TIME ZONE 'UTC', 'MM-DD'), 'open')), ', ' ORDER BY team_id) FROM ` + s + `.team_versions`,
			"5 five 01-05 open, 6 six 01-06 04-01"},
		{"role versions", `SELECT string_agg(concat_ws(' ', role_id, name, to_char(valid_from AT TIME ZONE 'UTC', 'MM-DD'),
			coalesce(to_char(valid_to AT TIME ZONE 'UTC', 'MM-DD'), 'open')), ', ') FROM ` + s + `.role_versions`, "3 three 01-03 open"},
	}
	for _, c := range checks {
		if got := read(c.q); got != c.want {
			t.Errorf("%s after migrating: %s, want %s", c.what, got, c.want)
		}
	}
}

// atVersion makes a schema holding the warehouse of migration version n (no
// newer one applied) and runs rows, each with {{schema}} for the quoted
// schema name; it returns the pool, the schema's name and its quoted name.
func atVersion(t *testing.T, n int, rows ...string) (*pgxpool.Pool, string, string) {
	t.Helper()
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	migrations, err := schema.Migrations(name)
	if err != nil {
		t.Fatal(err)
	}
	s := schema.QuoteIdentifier(name)
	setup := []string{`CREATE SCHEMA ` + s, `CREATE TABLE ` + s + `.schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	for _, m := range migrations[:n] {
		setup = append(setup, m.SQL, fmt.Sprintf(`INSERT INTO %s.schema_migrations (version, name) VALUES (%d, '%s')`, s, m.Version, m.Name))
	}
	for _, r := range rows {
		setup = append(setup, strings.ReplaceAll(r, "{{schema}}", s))
	}
	for _, q := range setup {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatalf("setting up version %d: %v", n, err)
		}
	}
	return pool, name, s
}
