package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/loadtest"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
	"github.com/usersync/usersync/sync/warehouse/reconcile"
)

// reconUser is a user resource with an updatedAt and the given
// relationships (JSON members, comma-separated).
func reconUser(id int64, updatedAt, rels string) string {
	return fmt.Sprintf(`{"id": %d, "type": "user", "attributes": {"title": "t%d", "updatedAt": %q}, "relationships": {%s}}`,
		id, id, updatedAt, rels)
}

func scanned(t *testing.T, id int64, updatedAt string) reconcile.ScannedUser {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, updatedAt)
	if err != nil {
		t.Fatal(err)
	}
	return reconcile.ScannedUser{ID: id, UpdatedAt: &at, UpdatedText: updatedAt}
}

// seedReconcile loads users 1-4 (2024-01-0N) and 5 (marked deleted), and a
// quarantined user 7, and returns the store and a reconcile run.
func seedReconcile(t *testing.T) (*warehouse.Store, int64) {
	t.Helper()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	var docs []string
	for id := int64(1); id <= 5; id++ {
		docs = append(docs, reconUser(id, fmt.Sprintf("2024-01-0%dT00:00:00.000Z", id), `"role": {"data": null}`))
	}
	bad := []warehouse.Quarantined{{Type: "user", ID: "7", Field: "locked", Error: "wrong type",
		Raw: []byte(`{"id": 7, "type": "user", "attributes": {"locked": "yes", "updatedAt": "2024-01-07T00:00:00.000Z"}}`)}}
	if _, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), `{"data": [`+strings.Join(docs, ",")+`]}`), bad, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, fmt.Sprintf(`UPDATE %q.users SET deleted_at = now() WHERE id = 5`, s.Schema())); err != nil {
		t.Fatal(err)
	}
	runID, err := s.Runs().Start(ctx, warehouse.KindReconcile, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, runID
}

// TestReconciliation walks the working set through a whole reconcile: the
// comparison, undeletes, the fetch queue read in batches, and the marking
// of what the API no longer returns, with its limit.
func TestReconciliation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		confirmed []int64 // ids a fetch by id returned after the scan
		limit     int64
		deleted   int64
		wantErr   bool
	}{
		{name: "marks what the scan missed", limit: 1, deleted: 1},
		{name: "a fetch by id keeps a user live", confirmed: []int64{4}, limit: 1, deleted: 0},
		{name: "refuses more than the limit", limit: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, runID := seedReconcile(t)
			ctx := context.Background()
			work, err := reconcile.Begin(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			defer work.Close()
			if err := work.StartWalk(ctx, runID, "https://api.example/api/v2/users"); err != nil {
				t.Fatal(err)
			}
			// 1 unchanged, 2 newer (and listed twice), 3 older, 4 not listed,
			// 5 back, 6 new, 7 new but quarantined unchanged.
			scan := []reconcile.ScannedUser{
				scanned(t, 1, "2024-01-01T00:00:00.000Z"), scanned(t, 2, "2024-02-02T00:00:00.000Z"),
				scanned(t, 2, "2024-02-02T00:00:00.000Z"), scanned(t, 3, "2023-01-03T00:00:00.000Z"),
				scanned(t, 5, "2024-01-05T00:00:00.000Z"), scanned(t, 6, "2024-01-06T00:00:00.000Z"),
				scanned(t, 7, "2024-01-07T00:00:00.000Z"),
			}
			for i, page := range [][]reconcile.ScannedUser{scan[:3], scan[3:]} {
				if err := work.RecordPage(ctx, page, 0, []string{"https://api.example/api/v2/users?page%5Bafter%5D=x", ""}[i]); err != nil {
					t.Fatal(err)
				}
			}
			cmp, err := work.Compare(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := (reconcile.Comparison{Scanned: 6, Live: 4, Gone: 1}); cmp != want {
				t.Errorf("comparison = %+v, want %+v", cmp, want)
			}
			if n, err := work.Undelete(ctx, runID); err != nil || n != 1 {
				t.Errorf("undeleted %d (%v), want 1", n, err)
			}
			q, err := work.QueueChanged(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := (reconcile.Queued{Missing: 1, Stale: 1, QuarantineSkipped: 1}); q != want {
				t.Errorf("queued = %+v, want %+v", q, want)
			}
			if n, err := work.QueueGone(ctx); err != nil || n != 1 {
				t.Errorf("gone queued %d (%v), want 1", n, err)
			}
			var batches [][]int64
			for after := int64(math.MinInt64); ; {
				ids, err := work.FetchBatch(ctx, after, 2)
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) == 0 {
					break
				}
				batches, after = append(batches, ids), ids[len(ids)-1]
			}
			if want := [][]int64{{2, 4}, {6}}; !reflect.DeepEqual(batches, want) {
				t.Errorf("fetch batches = %v, want %v", batches, want)
			}
			byReason, err := work.QueuedByReason(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int64{"missing": 1, "stale": 1, "gone": 1}; !reflect.DeepEqual(byReason, want) {
				t.Errorf("queued by reason = %v, want %v", byReason, want)
			}
			for _, id := range tt.confirmed {
				if err := work.AddScanned(ctx, []reconcile.ScannedUser{{ID: id}}); err != nil {
					t.Fatal(err)
				}
			}
			n, err := work.MarkDeleted(ctx, runID, tt.limit)
			var tooMany *reconcile.TooManyDeletionsError
			if tt.wantErr != errors.As(err, &tooMany) {
				t.Fatalf("MarkDeleted: %v", err)
			}
			if n != tt.deleted {
				t.Errorf("marked %d deleted, want %d", n, tt.deleted)
			}
			if got := warehousetest.Count(t, s, `SELECT count(*) FROM %s.users WHERE deleted_at IS NOT NULL`); got != tt.deleted {
				t.Errorf("%d users marked deleted, want %d", got, tt.deleted)
			}
			if got := warehousetest.Count(t, s, `SELECT count(*) FROM %s.sync_runs WHERE run_id = $1 AND deleted = $2 AND undeleted = 1`, runID, tt.deleted); got != 1 {
				t.Error("sync_runs deleted/undeleted counters not recorded")
			}
		})
	}
}

// TestReconcileLinks: users pointing at a deleted role or team are queued;
// so are users the scan saw linked otherwise than their rows hold, for the
// relationships the scan carried.
func TestReconcileLinks(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	const at = "2024-01-01T00:00:00.000Z"
	page := `{"data": [` +
		reconUser(1, at, `"role": {"data": {"id": 5, "type": "role"}}`) + `,` +
		reconUser(2, at, `"role": {"data": null}`) + `,` +
		reconUser(3, at, `"role": {"data": null}, "directAssignedTeams": {"data": [{"id": 10, "type": "team"}]}`) + `,` +
		reconUser(4, at, `"role": {"data": {"id": 6, "type": "role"}}, "teams": {"data": [{"id": 10, "type": "team"}, {"id": 11, "type": "team"}]}`) + `,` +
		reconUser(5, at, `"profile": {"data": {"id": 2, "type": "profile"}}`) + `,` +
		reconUser(7, at, `"role": {"data": {"id": 8, "type": "role"}}`) + `]}`
	if _, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), page), nil, nil); err != nil {
		t.Fatal(err)
	}
	// User 7 as the API sends it now cannot be typed: fetching it again
	// would only quarantine it again.
	bad := []warehouse.Quarantined{{Type: "user", ID: "7", Field: "locked", Error: "wrong type",
		Raw: []byte(`{"id": 7, "type": "user", "attributes": {"locked": "yes", "updatedAt": "` + at + `"}}`)}}
	if _, err := loadtest.Users(t, s).Write(ctx, nil, bad, nil); err != nil {
		t.Fatal(err)
	}
	listed := func(id int64, links map[string][]int64) reconcile.ScannedUser {
		u := scanned(t, id, at)
		if links != nil {
			u.Links = make([][]int64, len(schema.DimensionLinks()))
			for i, rel := range schema.DimensionLinks() {
				u.Links[i] = links[rel.Name] // nil: not sent
			}
		}
		return u
	}
	tests := []struct {
		name    string
		deleted map[string][]int64
		scan    []reconcile.ScannedUser
		wantIDs []int64
	}{
		{name: "nothing deleted", deleted: map[string][]int64{}},
		{name: "deleted role", deleted: map[string][]int64{"role": {5}}, wantIDs: []int64{1}},
		{name: "deleted team", deleted: map[string][]int64{"team": {10}, "profile": {1}}, wantIDs: []int64{3}},
		{name: "linkage as stored", scan: []reconcile.ScannedUser{
			listed(1, map[string][]int64{"role": {5}, "profile": {}}),
			listed(2, map[string][]int64{"role": {}, "teams": {}}),
			listed(3, map[string][]int64{"directAssignedTeams": {10}, "roleAssignedTeams": {}}),
			listed(4, map[string][]int64{"role": {6}, "teams": {11, 10}}),
			listed(5, nil), // nothing carried: nothing compared
		}},
		{name: "linkage changed", scan: []reconcile.ScannedUser{
			listed(1, map[string][]int64{"role": {}}),                      // role gone
			listed(2, map[string][]int64{"role": {7}}),                     // role back
			listed(3, map[string][]int64{"directAssignedTeams": {10, 12}}), // one more team
			listed(4, map[string][]int64{"role": {6}, "teams": {10}}),      // one team fewer
			listed(5, map[string][]int64{"role": {}, "profile": {3}}),      // another profile
			listed(6, map[string][]int64{"role": {1}}),                     // not in the warehouse: missing, not relinked
			listed(7, map[string][]int64{"role": {}}),                      // quarantined unchanged: left alone
		}, wantIDs: []int64{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work, err := reconcile.Begin(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			defer work.Close()
			if err := work.StartWalk(ctx, 0, "https://api.example/api/v2/users"); err != nil {
				t.Fatal(err)
			}
			var n int64
			if tt.scan != nil {
				if err := work.AddScanned(ctx, tt.scan); err != nil {
					t.Fatal(err)
				}
				n, err = work.QueueLinkage(ctx)
			} else {
				n, err = work.QueueDeletedLinks(ctx, tt.deleted)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(tt.wantIDs)) {
				t.Errorf("queued %d, want %d", n, len(tt.wantIDs))
			}
			ids, err := work.FetchBatch(ctx, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 0 || len(tt.wantIDs) != 0 {
				if !reflect.DeepEqual(ids, tt.wantIDs) {
					t.Errorf("queued ids %v, want %v", ids, tt.wantIDs)
				}
			}
		})
	}
}

// TestDeletedDimensionIDs lists the deleted teams, roles and profiles.
func TestDeletedDimensionIDs(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	for _, res := range []schema.Resource{schema.Team(), schema.Role(), schema.Profile()} {
		body := fmt.Sprintf(`{"data": [{"id": 1, "type": %q, "attributes": {"name": "a"}}, {"id": 2, "type": %q, "attributes": {"name": "b"}}]}`, res.Type, res.Type)
		if _, err := loadtest.LoadDimension(ctx, s, res.Type, warehousetest.Rows(t, res, body), nil, []int64{1, 2}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := loadtest.LoadDimension(ctx, s, "role", nil, nil, []int64{1}, 0); err != nil {
		t.Fatal(err)
	}
	work, err := reconcile.Begin(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	got, err := work.DeletedDimensionIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]int64{"role": {2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted = %v, want %v", got, want)
	}
}
