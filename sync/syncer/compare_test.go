package syncer_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestCompareSeesDifferences keeps the comparison every sync test relies on
// honest: each kind of difference between the warehouse and the simulator
// is reported.
func TestCompareSeesDifferences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, apisim.Options{Users: 300})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	if got := syncertest.Compare(ctx, e.sim, e.store); len(got) != 0 {
		t.Fatalf("after a full sync: %q", got)
	}
	u := e.sim.Users()[0].ID
	steps := []struct{ sql, want string }{
		{`UPDATE {schema}.users SET title = 'not the simulator''s' WHERE id = $1`, "users " + strconv.FormatInt(u, 10) + " title"},
		{`DELETE FROM {schema}.user_teams WHERE user_id = (SELECT min(user_id) FROM {schema}.user_teams)`, "memberships"},
		{`UPDATE {schema}.users SET mailbox_ids = mailbox_ids || 999999999::bigint WHERE id = $1`, "other linkage"},
		{`UPDATE {schema}.roles SET deleted_at = now() WHERE id = (SELECT min(id) FROM {schema}.roles)`, "roles: warehouse has"},
	}
	for _, s := range steps {
		sql := strings.ReplaceAll(s.sql, "{schema}", `"`+e.store.Schema()+`"`)
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, u)
		}
		if _, err := e.store.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(syncertest.Compare(ctx, e.sim, e.store), "\n")
		if !strings.Contains(got, s.want) {
			t.Errorf("after %s: the comparison does not say %q:\n%s", s.sql, s.want, got)
		}
	}
}
