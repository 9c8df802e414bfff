// Package syncertest holds test helpers shared by the packages that run
// syncs: comparing a warehouse with the simulator's ground truth.
package syncertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi/apisim"
	"github.com/usersync/usersync/sync/warehouse"
)

// AssertMirrors compares the warehouse with the simulator's ground truth,
// attribute by attribute and relationship by relationship: every live user,
// team, role and profile equal, deleted ones marked, memberships equal.
func AssertMirrors(t testing.TB, sim *apisim.Server, store *warehouse.Store) {
	t.Helper()
	for _, m := range Compare(context.Background(), sim, store) {
		t.Error(m)
	}
}

// Compare returns every difference between the warehouse and the
// simulator's ground truth (at most a few per table), or nothing.
func Compare(ctx context.Context, sim *apisim.Server, store *warehouse.Store) []string {
	r := &reporter{}
	compareAll(ctx, r, sim, store)
	return r.msgs
}

// reporter collects mismatches.
type reporter struct{ msgs []string }

func (r *reporter) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *reporter) Fatal(args ...any) { r.msgs = append(r.msgs, fmt.Sprint(args...)) }
func (r *reporter) Helper()           {}

type failer interface {
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Helper()
}

func compareAll(ctx context.Context, t failer, sim *apisim.Server, store *warehouse.Store) {
	compareTable(t, ctx, store, schema.User(), sim.Users())
	compareTable(t, ctx, store, schema.Team(), sim.Teams())
	compareTable(t, ctx, store, schema.Role(), sim.Roles())
	compareTable(t, ctx, store, schema.Profile(), sim.Profiles())

	want := map[[2]int64]bool{}
	for _, m := range sim.Memberships() {
		want[[2]int64{m.UserID, m.TeamID}] = true
	}
	rows, err := store.Pool().Query(ctx, fmt.Sprintf(`SELECT ut.user_id, ut.team_id FROM %[1]s.user_teams ut
		JOIN %[1]s.users u ON u.id = ut.user_id AND u.deleted_at IS NULL
		JOIN %[1]s.teams t ON t.id = ut.team_id AND t.deleted_at IS NULL`, pgx.Identifier{store.Schema()}.Sanitize()))
	if err != nil {
		t.Fatal(err)
		return
	}
	got := map[[2]int64]bool{}
	for rows.Next() {
		var u, tm int64
		if err := rows.Scan(&u, &tm); err != nil {
			t.Fatal(err)
			return
		}
		got[[2]int64{u, tm}] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("memberships: warehouse %d, simulator %d", len(got), len(want))
	}
	// Every other to-many linkage of live users. Links to teams the warehouse
	// marked deleted stay (history), as the API drops them from users without
	// changing the users' updatedAt; like memberships, only live ones count.
	wantLinks := map[string]bool{}
	for _, u := range sim.Users() {
		for _, rel := range schema.User().ToMany() {
			if rel.Name == "teams" {
				continue
			}
			for _, id := range u.Relationships[rel.Name] {
				wantLinks[fmt.Sprintf("%d/%s/%d", u.ID, rel.Name, id)] = true
			}
		}
	}
	rows, err = store.Pool().Query(ctx, fmt.Sprintf(`SELECT r.user_id, r.relationship, r.related_id FROM %[1]s.user_relationships r
		JOIN %[1]s.users u ON u.id = r.user_id AND u.deleted_at IS NULL
		WHERE NOT (r.related_type = 'team' AND EXISTS (SELECT 1 FROM %[1]s.teams t WHERE t.id = r.related_id AND t.deleted_at IS NOT NULL))`, pgx.Identifier{store.Schema()}.Sanitize()))
	if err != nil {
		t.Fatal(err)
		return
	}
	gotLinks := map[string]bool{}
	for rows.Next() {
		var u, id int64
		var rel string
		if err := rows.Scan(&u, &rel, &id); err != nil {
			t.Fatal(err)
			return
		}
		gotLinks[fmt.Sprintf("%d/%s/%d", u, rel, id)] = true
	}
	if !reflect.DeepEqual(gotLinks, wantLinks) {
		t.Errorf("other linkage: warehouse %d rows, simulator %d", len(gotLinks), len(wantLinks))
	}
}

func compareTable(t failer, ctx context.Context, store *warehouse.Store, res schema.Resource, truth []apisim.Resource) {
	t.Helper()
	rows, err := store.Pool().Query(ctx, fmt.Sprintf(`SELECT id, to_jsonb(x) FROM %s.%s x WHERE deleted_at IS NULL`,
		pgx.Identifier{store.Schema()}.Sanitize(), pgx.Identifier{res.Table}.Sanitize()))
	if err != nil {
		t.Fatal(err)
		return
	}
	got := map[int64]map[string]any{}
	for rows.Next() {
		var id int64
		var doc []byte
		if err := rows.Scan(&id, &doc); err != nil {
			t.Fatal(err)
			return
		}
		m := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
			return
		}
		got[id] = m
	}
	if len(got) != len(truth) {
		ids := []int64{}
		for _, r := range truth {
			if _, ok := got[r.ID]; !ok {
				ids = append(ids, r.ID)
			}
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if len(ids) > 5 {
			ids = ids[:5]
		}
		t.Errorf("%s: warehouse has %d live rows, simulator %d (missing e.g. %v)", res.Table, len(got), len(truth), ids)
	}
	mismatches := 0
	for _, r := range truth {
		row, ok := got[r.ID]
		if !ok {
			continue
		}
		for _, a := range res.Attributes {
			if !sameValue(a, r.Attributes[a.Name], row[a.Column()]) {
				mismatches++
				if mismatches <= 5 {
					t.Errorf("%s %d %s: warehouse %v, simulator %v", res.Table, r.ID, a.Name, row[a.Column()], r.Attributes[a.Name])
				}
			}
		}
		for _, rel := range res.ToOne() {
			var want any
			if ids := r.Relationships[rel.Name]; len(ids) == 1 {
				want = ids[0]
			}
			gotID := row[rel.Column()]
			if n, ok := gotID.(json.Number); ok {
				v, _ := n.Int64()
				gotID = v
			}
			if gotID != want {
				mismatches++
				if mismatches <= 5 {
					t.Errorf("%s %d %s: warehouse %v, simulator %v", res.Table, r.ID, rel.Name, gotID, want)
				}
			}
		}
	}
	if mismatches > 5 {
		t.Errorf("%s: %d mismatches in all", res.Table, mismatches)
	}
}

func sameValue(a schema.Attribute, want, got any) bool {
	if want == nil || got == nil {
		return want == nil && got == nil
	}
	switch a.Type {
	case schema.Integer:
		n, ok := got.(json.Number)
		v, err := n.Int64()
		return ok && err == nil && v == want.(int64)
	case schema.Boolean, schema.String:
		return got == want
	case schema.DateTime:
		s, _ := got.(string)
		ts, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && ts.Equal(want.(time.Time))
	case schema.Object:
		var w, g any
		_ = json.Unmarshal(want.(json.RawMessage), &w)
		b, _ := json.Marshal(got)
		_ = json.Unmarshal(b, &g)
		return reflect.DeepEqual(w, g)
	}
	return false
}
