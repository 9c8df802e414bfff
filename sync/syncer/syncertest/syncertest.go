package syncertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
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

func compareAll(ctx context.Context, r *reporter, sim *apisim.Server, store *warehouse.Store) {
	// Rendered once: the simulator renders and decodes every user (about a
	// millisecond each), and the scale run compares hundreds of thousands.
	users := sim.Users()
	compareTable(ctx, r, store, schema.User(), users)
	for _, res := range schema.Dimensions() {
		compareTable(ctx, r, store, res, sim.Resources(res.Type))
	}

	want := map[string]bool{}
	for _, m := range sim.Memberships() {
		want[fmt.Sprintf("%d/%d", m.UserID, m.TeamID)] = true
	}
	got, err := keys(ctx, store, `SELECT format('%s/%s', ut.user_id, ut.team_id) FROM %[1]s.user_teams ut
		JOIN %[1]s.users u ON u.id = ut.user_id AND u.deleted_at IS NULL
		JOIN %[1]s.teams t ON t.id = ut.team_id AND t.deleted_at IS NULL`)
	if err != nil {
		r.Errorf("reading memberships: %v", err)
	} else if !reflect.DeepEqual(got, want) {
		r.Errorf("memberships: warehouse %d, simulator %d", len(got), len(want))
	}
	// Every other to-many linkage of live users. Links to teams the warehouse
	// marked deleted stay (history), as the API drops them from users without
	// changing the users' updatedAt; like memberships, only live ones count.
	wantLinks := map[string]bool{}
	for _, u := range users {
		for _, rel := range schema.User().ToMany() {
			if rel.Name == "teams" {
				continue
			}
			for _, id := range u.Relationships[rel.Name] {
				wantLinks[fmt.Sprintf("%d/%s/%d", u.ID, rel.Name, id)] = true
			}
		}
	}
	gotLinks, err := keys(ctx, store, `SELECT format('%s/%s/%s', r.user_id, r.relationship, r.related_id) FROM %[1]s.user_relationships r
		JOIN %[1]s.users u ON u.id = r.user_id AND u.deleted_at IS NULL
		WHERE NOT (r.related_type = 'team' AND EXISTS (SELECT 1 FROM %[1]s.teams t WHERE t.id = r.related_id AND t.deleted_at IS NOT NULL))`)
	if err != nil {
		r.Errorf("reading linkage: %v", err)
	} else if !reflect.DeepEqual(gotLinks, wantLinks) {
		r.Errorf("other linkage: warehouse %d rows, simulator %d", len(gotLinks), len(wantLinks))
	}
}

// keys runs a query of one text column, %[1]s standing for the warehouse's
// schema, and returns its values as a set.
func keys(ctx context.Context, store *warehouse.Store, query string) (map[string]bool, error) {
	rows, err := store.Pool().Query(ctx, strings.ReplaceAll(query, "%[1]s", pgx.Identifier{store.Schema()}.Sanitize()))
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	var key string
	_, err = pgx.ForEachRow(rows, []any{&key}, func() error {
		set[key] = true
		return nil
	})
	return set, err
}

// compareTable compares the live rows of res's table with the simulator's.
func compareTable(ctx context.Context, r *reporter, store *warehouse.Store, res schema.Resource, truth []apisim.Resource) {
	got, err := liveRows(ctx, store, res.Table)
	if err != nil {
		r.Errorf("reading %s: %v", res.Table, err)
		return
	}
	if len(got) != len(truth) {
		ids := []int64{}
		for _, x := range truth {
			if _, ok := got[x.ID]; !ok {
				ids = append(ids, x.ID)
			}
		}
		slices.Sort(ids)
		r.Errorf("%s: warehouse has %d live rows, simulator %d (missing e.g. %v)", res.Table, len(got), len(truth), ids[:min(5, len(ids))])
	}
	var diffs []string
	for _, x := range truth {
		if row, ok := got[x.ID]; ok {
			diffs = append(diffs, diffRow(res, x, row)...)
		}
	}
	for _, d := range diffs[:min(5, len(diffs))] {
		r.Errorf("%s", d)
	}
	if len(diffs) > 5 {
		r.Errorf("%s: %d mismatches in all", res.Table, len(diffs))
	}
}

// liveRows returns the table's rows that are not marked deleted, by id, as
// JSON objects (numbers as json.Number).
func liveRows(ctx context.Context, store *warehouse.Store, table string) (map[int64]map[string]any, error) {
	rows, err := store.Pool().Query(ctx, fmt.Sprintf(`SELECT id, to_jsonb(x) FROM %s.%s x WHERE deleted_at IS NULL`,
		pgx.Identifier{store.Schema()}.Sanitize(), pgx.Identifier{table}.Sanitize()))
	if err != nil {
		return nil, err
	}
	got := map[int64]map[string]any{}
	var id int64
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &doc}, func() error {
		m := map[string]any{}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		got[id] = m
		return dec.Decode(&m)
	})
	return got, err
}

// diffRow returns a line for each attribute and to-one relationship of the
// warehouse's row that differs from the simulator's resource.
func diffRow(res schema.Resource, truth apisim.Resource, row map[string]any) []string {
	var diffs []string
	for _, a := range res.Attributes {
		if !sameValue(a, truth.Attributes[a.Name], row[a.Column()]) {
			diffs = append(diffs, fmt.Sprintf("%s %d %s: warehouse %v, simulator %v", res.Table, truth.ID, a.Name, row[a.Column()], truth.Attributes[a.Name]))
		}
	}
	for _, rel := range res.ToOne() {
		var want any
		if ids := truth.Relationships[rel.Name]; len(ids) == 1 {
			want = ids[0]
		}
		got := row[rel.Column()]
		if n, ok := got.(json.Number); ok {
			v, _ := n.Int64()
			got = v
		}
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s %d %s: warehouse %v, simulator %v", res.Table, truth.ID, rel.Name, got, want))
		}
	}
	return diffs
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
