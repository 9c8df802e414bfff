package users_test

import (
	"context"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/loadtest"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

func TestLoadUsers(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	runID, err := s.Runs().Start(ctx, warehouse.KindFull, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := &warehouse.Checkpoint{RunID: runID, NextURL: "http://x/next"}
	page := `{"data": [` + warehousetest.User(1, "CEO", `{"data": [{"id": 10, "type": "team"}, {"id": 11, "type": "team"}]}`, `{"data": {"id": 5, "type": "role"}}`) + `,` +
		warehousetest.User(2, "CTO", `{"data": []}`, `{"data": null}`) + `]}`
	c, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), page), nil, cp)
	if err != nil {
		t.Fatal(err)
	}
	if c.Inserted != 2 || c.Updated != 0 || c.Versions != 2 {
		t.Errorf("first load: %+v", c)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_teams`); n != 2 {
		t.Errorf("user_teams = %d", n)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.sync_runs WHERE next_url = 'http://x/next' AND pages = 1 AND fetched = 2 AND max_updated_at = '2024-01-02T00:00:00Z'`); n != 1 {
		t.Error("checkpoint not written")
	}

	// The same page again: nothing written, no version.
	c, err = loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), page), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Inserted != 0 || c.Updated != 0 || c.Unchanged != 2 || c.Versions != 0 {
		t.Errorf("unchanged load: %+v", c)
	}

	// User 1 changes title and teams; its role linkage is not sent this time.
	page2 := `{"data": [` + warehousetest.User(1, "Chair", `{"data": [{"id": 11, "type": "team"}, {"id": 12, "type": "team"}]}`, `{"links": {"related": "x"}}`) + `]}`
	c, err = loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), page2), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Updated != 1 || c.Versions != 1 {
		t.Errorf("changed load: %+v", c)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE id = 1 AND title = 'Chair' AND role_id = 5`); n != 1 {
		t.Error("title not updated or role_id not kept when the linkage was not sent")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_teams WHERE user_id = 1 AND team_id IN (11, 12)`); n != 2 {
		t.Error("teams not replaced")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_teams WHERE user_id = 1`); n != 2 {
		t.Error("old team kept")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_versions WHERE user_id = 1`); n != 2 {
		t.Errorf("versions of user 1 = %d", n)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_versions WHERE user_id = 1 AND valid_to IS NULL AND title = 'Chair'`); n != 1 {
		t.Error("current version wrong")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_versions a JOIN %[1]s.user_versions b ON a.user_id = b.user_id AND a.version_id < b.version_id AND a.valid_to > b.valid_from`); n != 0 {
		t.Error("overlapping versions")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_relationships WHERE relationship = 'mailboxes'`); n != 2 {
		t.Errorf("mailbox links = %d", n)
	}
	teams := `{"data": [{"id": 11, "type": "team", "attributes": {"name": "b"}}, {"id": 12, "type": "team", "attributes": {"name": "a"}}]}`
	if _, err := loadtest.LoadDimension(ctx, s, "team", warehousetest.Rows(t, schema.Team(), teams), nil, []int64{11, 12}, 0); err != nil {
		t.Fatal(err)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users_current WHERE id = 1 AND team_ids = '{12,11}' AND team_names = '{a,b}'`); n != 1 {
		t.Error("users_current team_ids wrong")
	}
}

func TestLoadUsersQuarantine(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	bad := []warehouse.Quarantined{{Type: "user", ID: "abc", Field: "id", Error: "id is not an integer", Raw: []byte(`{"id": "abc", "x": "\u0000"}`)}}
	c, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), `{"data": [`+warehousetest.User(3, "x", `{"data": []}`, `{"data": null}`)+`]}`), bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Quarantined != 1 || c.Inserted != 1 {
		t.Errorf("counts %+v", c)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.quarantine WHERE resource_id = 'abc' AND field = 'id' AND resolved_at IS NULL`); n != 1 {
		t.Error("quarantine row missing")
	}
	// A later successful load of the same id resolves its quarantine record.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO "`+s.Schema()+`".quarantine (resource_type, resource_id, error, raw) VALUES ('user', '3', 'x', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), `{"data": [`+warehousetest.User(3, "y", `{"data": []}`, `{"data": null}`)+`]}`), nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.quarantine WHERE resource_id = '3' AND resolved_at IS NOT NULL`); n != 1 {
		t.Error("quarantine not resolved")
	}
}

// TestDataConnectionsVersioned: a change in a user's data connections alone
// is a new version; a page without them leaves the stored value.
func TestDataConnectionsVersioned(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	page := func(meta string) string {
		return `{"data": [{"id": 9, "type": "user", "attributes": {"title": "x", "updatedAt": "2024-01-01T00:00:00Z"}` + meta + `}]}`
	}
	load := func(body string) warehouse.Counts {
		t.Helper()
		c, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), body), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	load(page(`, "meta": {"dataConnections": [{"provider": "salesforce", "connected": true}]}`))
	if c := load(page(`, "meta": {"dataConnections": [{"connected": true,   "provider": "salesforce"}]}`)); c.Versions != 0 || c.Updated != 0 {
		t.Errorf("same connections, other formatting: %+v", c)
	}
	if c := load(page(`, "meta": {"dataConnections": [{"provider": "salesforce", "connected": false}]}`)); c.Versions != 1 || c.Updated != 1 {
		t.Errorf("changed connections: %+v", c)
	}
	if c := load(page(``)); c.Versions != 0 || c.Updated != 0 {
		t.Errorf("connections not sent: %+v", c)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE data_connections @> '[{"connected": false}]'`); n != 1 {
		t.Error("stored connections nulled or wrong")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_versions WHERE user_id = 9`); n != 2 {
		t.Errorf("versions = %d, want 2", n)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users_current WHERE data_connections IS NOT NULL`); n != 1 {
		t.Error("users_current lacks data_connections")
	}
}

// TestLoadUsersLinkage checks the to-many linkage kept in the users row:
// ids of the catalog's type in the *_ids columns, the rest (another type, a
// relationship the catalog does not know) in other_relationships, a
// relationship not sent keeps what is stored, one sent empty clears it, and
// user_relationships shows all of it as rows.
func TestLoadUsersLinkage(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	load := func(rels string) warehouse.Counts {
		t.Helper()
		page := `{"data": [{"id": 1, "type": "user", "attributes": {"title": "x", "updatedAt": "2024-01-01T00:00:00.000Z"}, "relationships": {` + rels + `}}]}`
		c, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), page), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	links := func() string {
		t.Helper()
		var out *string
		err := s.Pool().QueryRow(ctx, `SELECT string_agg(concat_ws('/', relationship, related_type, related_id), ' ' ORDER BY relationship, related_type, related_id)
			FROM "`+s.Schema()+`".user_relationships WHERE user_id = 1`).Scan(&out)
		if err != nil {
			t.Fatal(err)
		}
		if out == nil {
			return ""
		}
		return *out
	}
	load(`"mailboxes": {"data": [{"id": 11, "type": "mailbox"}, {"id": 10, "type": "mailbox"}, {"id": 11, "type": "mailbox"}, {"id": 12, "type": "prospect"}]},
		"jobRoles": {"data": [{"id": 4, "type": "jobRole"}]}, "recipients": {"data": [{"id": 7, "type": "recipient"}]}`)
	want := "jobRoles/jobRole/4 mailboxes/mailbox/10 mailboxes/mailbox/11 mailboxes/prospect/12 recipients/recipient/7"
	if got := links(); got != want {
		t.Errorf("first load:\n got %s\nwant %s", got, want)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE mailbox_ids = '{11,10}' AND recipient_ids = '{7}' AND content_category_ids IS NULL`); n != 1 {
		t.Error("array columns wrong: repeats kept, order changed or an unsent relationship not null")
	}
	// Nothing sent: everything stays, and nothing is rewritten.
	if c := load(``); c.Updated != 0 || c.Unchanged != 1 {
		t.Errorf("load without linkage: %+v", c)
	}
	if got := links(); got != want {
		t.Errorf("after a load without linkage:\n got %s\nwant %s", got, want)
	}
	// Recipients sent empty, mailboxes changed, the unknown one not sent.
	load(`"mailboxes": {"data": [{"id": 13, "type": "mailbox"}]}, "recipients": {"data": []}`)
	want = "jobRoles/jobRole/4 mailboxes/mailbox/13"
	if got := links(); got != want {
		t.Errorf("after a partial load:\n got %s\nwant %s", got, want)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE recipient_ids = '{}' AND other_relationships = '{"jobRoles": [{"id": 4, "type": "jobRole"}]}'`); n != 1 {
		t.Error("recipients not cleared, or the mismatched mailbox not dropped from other_relationships")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.user_versions WHERE user_id = 1`); n != 1 {
		t.Errorf("linkage changes made %d versions, want 1", n)
	}
}

// TestPreparePage: one page prepared with PreparePage is not visible until
// its Commit, which writes it with the checkpoint given, advanced by the
// page, in the same transaction; a page rolled back stores nothing, and
// Rollback after Commit undoes nothing; a page that cannot be written fails
// PreparePage.
func TestPreparePage(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	u := loadtest.Users(t, s)
	ctx := context.Background()
	runID, err := s.Runs().Start(ctx, warehouse.KindFull, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := func(ids ...int) []normalize.Row {
		var data []string
		for _, id := range ids {
			data = append(data, warehousetest.User(id, "x", `{"data": [{"id": 1, "type": "team"}]}`, `{"data": null}`))
		}
		return warehousetest.Rows(t, schema.User(), `{"data": [`+strings.Join(data, ",")+`]}`)
	}
	base := warehouse.Checkpoint{RunID: runID, Progress: warehouse.Progress{Pages: 4, Fetched: 40, Requests: 7}}
	w := base.Writer()
	page, err := u.PreparePage(ctx, rows(1, 2), nil, w)
	if err != nil {
		t.Fatal(err)
	}
	if visible := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users`); visible != 0 {
		t.Errorf("%d users of a prepared page visible, want none before the commit", visible)
	}
	next := base
	next.NextURL = "http://x/next"
	cp, err := page.Commit(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	page.Rollback(ctx) // after Commit: nothing
	if cp.Progress.Pages != 5 || cp.Progress.Fetched != 42 || cp.Progress.Inserted != 2 || cp.Progress.Requests != 7 || cp.NextURL != "http://x/next" {
		t.Errorf("checkpoint after the page: %+v", cp)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.sync_runs WHERE next_url = 'http://x/next' AND pages = 5 AND fetched = 42 AND inserted = 2 AND requests = 7`); n != 1 {
		t.Error("checkpoint not written")
	}
	// One transaction wrote the users, their teams and the checkpoint.
	if n := warehousetest.Count(t, s, `SELECT count(DISTINCT xmin::text) FROM (SELECT xmin FROM %s.users
		UNION ALL SELECT xmin FROM %[1]s.user_teams UNION ALL SELECT xmin FROM %[1]s.sync_runs) written`); n != 1 {
		t.Errorf("the page and its checkpoint were written by %d transactions, want 1", n)
	}

	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE id IN (1, 2)`); n != 2 {
		t.Errorf("Rollback after Commit left %d of the page's 2 users", n)
	}

	page, err = u.PreparePage(ctx, rows(3), nil, w)
	if err != nil {
		t.Fatal(err)
	}
	page.Rollback(ctx)
	page.Rollback(ctx) // a second time: nothing
	bad := rows(4)
	bad[0].Values = bad[0].Values[:1] // cannot be encoded
	if _, err = u.PreparePage(ctx, bad, nil, w); err == nil {
		t.Error("PreparePage of a page that cannot be written: no error")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE id IN (3, 4)`); n != 0 {
		t.Errorf("%d users of the failed pages stored", n)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.sync_runs WHERE pages = 5`); n != 1 {
		t.Error("a failed page moved the checkpoint")
	}
}
