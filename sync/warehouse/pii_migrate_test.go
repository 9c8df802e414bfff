package warehouse_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/usersync/usersync/sync/warehouse"
)

// TestMigrationPolicyOfRows migrates warehouses at version 7 to the newest:
// rows get the id of the only policy ever recorded when they were written
// since it was first recorded, or all of them when a pii apply of it
// finished; rows written before, rows of other types' quarantine records,
// and every row when several policies were recorded, stay null.
func TestMigrationPolicyOfRows(t *testing.T) {
	t.Parallel()
	rows := []string{
		`INSERT INTO {{schema}}.users (id, raw, content_hash, synced_at) VALUES (1, '{}', '\x01', '2026-02-01Z'), (2, '{}', '\x02', '2026-04-01Z')`,
		`INSERT INTO {{schema}}.user_version_history (user_id, content_hash, raw, valid_from, valid_to) VALUES
			(1, '\x00', '{}', '2026-01-01Z', '2026-02-01Z'), (2, '\x00', '{}', '2026-03-02Z', '2026-04-01Z')`,
		`INSERT INTO {{schema}}.quarantine (resource_type, resource_id, error, raw, received_at) VALUES
			('user', '1', 'x', '{}', '2026-02-01Z'), ('user', '2', 'x', '{}', '2026-04-01Z'), ('team', '3', 'x', '{}', '2026-04-01Z')`,
		`INSERT INTO {{schema}}.pii_policies (fingerprint, hashed, dropped, drop_unknown, key_id, first_used_at)
			VALUES ('hash=email drop= unknown=keep key=k1', '{email}', '{}', false, 'k1', '2026-03-01Z')`,
	}
	// The ids of users 1 and 2, versions of users 1 and 2, quarantine
	// records of users 1 and 2 and of team 3 (0: null).
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"one policy", nil, "0 1 0 1 0 1 0"},
		{"one policy applied", []string{`INSERT INTO {{schema}}.pii_apply (fingerprint, phase, finished_at)
			VALUES ('hash=email drop= unknown=keep key=k1', 'done', '2026-03-05Z')`}, "1 1 1 1 1 1 0"},
		{"two policies", []string{`INSERT INTO {{schema}}.pii_policies (fingerprint, hashed, dropped, drop_unknown, first_used_at)
			VALUES ('none', '{}', '{}', false, '2026-01-01Z')`}, "0 0 0 0 0 0 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, name, s := atVersion(t, 7, append(append([]string{}, rows...), tc.extra...)...)
			ctx := context.Background()
			if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
				t.Fatalf("migrating: %v", err)
			}
			var got string
			err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT concat_ws(' ',
				(SELECT string_agg(coalesce(pii_policy_id, 0)::text, ' ' ORDER BY id) FROM %[1]s.users),
				(SELECT string_agg(coalesce(pii_policy_id, 0)::text, ' ' ORDER BY user_id) FROM %[1]s.user_version_history),
				(SELECT string_agg(coalesce(pii_policy_id, 0)::text, ' ' ORDER BY quarantine_id) FROM %[1]s.quarantine))`, s)).Scan(&got)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("pii_policy_id of users, versions and quarantine records: %s, want %s", got, tc.want)
			}
		})
	}
}
