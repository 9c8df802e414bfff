package users

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// userRows types one user per id of titles (ids 1 to 9, in order), each
// in one team of its own.
func userRows(t *testing.T, titles map[int]string) []normalize.Row {
	t.Helper()
	var users []string
	for id := 1; id <= 9; id++ {
		if title, ok := titles[id]; ok {
			users = append(users, fmt.Sprintf(`{"id": %d, "type": "user", "attributes": {"title": %q, "updatedAt": "2024-01-0%dT00:00:00.000Z"},
				"relationships": {"teams": {"data": [{"id": %d, "type": "team"}]}}}`, id, title, id, 10+id))
		}
	}
	return warehousetest.Rows(t, schema.User(), `{"data": [`+strings.Join(users, ",")+`]}`)
}

// TestWriteAllNew: a page tried as all new is written without reading the
// warehouse when its users are new, and falls back to the classification
// when one was stored (changed, or marked deleted), with the same result
// as a page written the usual way.
func TestWriteAllNew(t *testing.T) {
	t.Parallel()
	s, pool, _ := copyStore(t)
	ctx := context.Background()
	write := func(titles map[int]string, tryAllNew bool) (warehouse.Counts, bool) {
		t.Helper()
		p, err := s.prepareUsers(ctx, userRows(t, titles), nil, pgrow.Writer{}, tryAllNew)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := p.commit(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c, p.allNew
	}
	one := func(sql string) int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, fmt.Sprintf(sql, s.q)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if c, allNew := write(map[int]string{1: "a", 2: "b"}, true); !allNew || c.Inserted != 2 || c.Versions != 2 {
		t.Fatalf("new users: %+v, all new %v", c, allNew)
	}
	// User 2 is stored: the COPY breaks the key, the page is classified.
	if c, allNew := write(map[int]string{2: "b2", 3: "c"}, true); allNew || c.Inserted != 1 || c.Updated != 1 || c.Versions != 2 {
		t.Fatalf("a stored user among new ones: %+v, all new %v", c, allNew)
	}
	if one(`SELECT count(*) FROM %s.users WHERE id = 2 AND title = 'b2'`) != 1 || one(`SELECT count(*) FROM %s.user_version_history WHERE user_id = 2`) != 1 {
		t.Fatal("user 2 not updated with its old version in the history")
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s.users SET deleted_at = now() WHERE id = 1`, s.q)); err != nil {
		t.Fatal(err)
	}
	if c, allNew := write(map[int]string{1: "a"}, true); allNew || c.Updated != 1 || c.Inserted != 0 {
		t.Fatalf("a user marked deleted comes back: %+v, all new %v", c, allNew)
	}
	if one(`SELECT count(*) FROM %s.users WHERE deleted_at IS NULL`) != 3 || one(`SELECT count(*) FROM %s.user_teams`) != 3 {
		t.Fatal("want users 1, 2, 3 live with their teams")
	}
	// Classified the usual way, a page of new users reports them all new.
	if c, allNew := write(map[int]string{4: "d"}, false); !allNew || c.Inserted != 1 {
		t.Fatalf("new user read first: %+v, all new %v", c, allNew)
	}
}
