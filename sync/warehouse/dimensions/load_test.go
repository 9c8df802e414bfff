package dimensions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/dimensions"
	"github.com/usersync/usersync/sync/warehouse/internal/loadtest"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

func teamJSON(id int, name, updated string) string {
	return fmt.Sprintf(`{"id": %d, "type": "team", "attributes": {"name": %q, "updatedAt": %q}}`, id, name, updated)
}

func teamRows(t *testing.T, items ...string) []normalize.Row {
	t.Helper()
	return warehousetest.Rows(t, schema.Team(), `{"data": [`+strings.Join(items, ",")+`]}`)
}

// stream loads pages of teams through one DimensionLoad.
type teamPage struct {
	rows    []normalize.Row
	bad     []warehouse.Quarantined
	present []int64
}

func streamTeams(t *testing.T, s *warehouse.Store, runID int64, pages ...teamPage) warehouse.Counts {
	t.Helper()
	ctx := context.Background()
	d, err := loadtest.Dimensions(t, s).Begin(ctx, "team", runID)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, p := range pages {
		if err := d.Page(ctx, p.rows, p.bad, p.present); err != nil {
			t.Fatal(err)
		}
	}
	c, err := d.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDimensionLoadPages: a list staged over several pages is applied as one
// list: duplicates across pages keep the greatest updatedAt (the last on
// ties), quarantined ids are never taken for deleted ones, counts are those
// of the whole list, ids that disappeared are marked deleted and cleared
// when they come back.
func TestDimensionLoadPages(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	runID, err := s.Runs().Start(ctx, warehouse.KindFull, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const day1, day2 = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"
	bad := []warehouse.Quarantined{{Type: "team", ID: "5", Field: "name", Error: "not a string", Raw: []byte(`{"id": 5, "x": "\u0000"}`)}}
	c := streamTeams(t, s, runID,
		teamPage{rows: teamRows(t, teamJSON(1, "a", day1), teamJSON(2, "b", day1), teamJSON(3, "c-new", day2)), present: []int64{1, 2, 3}},
		teamPage{rows: teamRows(t, teamJSON(4, "d", day1), teamJSON(3, "c-old", day1)), bad: bad, present: []int64{4, 3, 5}},
		teamPage{rows: teamRows(t, teamJSON(6, "f1", day1), teamJSON(6, "f2", day1)), present: []int64{6, 6}},
	)
	if want := (warehouse.Counts{Inserted: 5, Quarantined: 1}); c != want {
		t.Errorf("first list: %+v, want %+v", c, want)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE (id = 3 AND name = 'c-new') OR (id = 6 AND name = 'f2')`); n != 2 {
		t.Error("duplicates across pages: the greatest updatedAt, then the last one, must win")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.quarantine WHERE resource_type = 'team' AND resource_id = '5' AND field = 'name' AND run_id = $1 AND resolved_at IS NULL`, runID); n != 1 {
		t.Error("quarantine record of team 5 missing")
	}

	// Team 6 disappears, team 5 can be typed now, team 4 changed (an
	// attribute the catalog does not know, kept in raw, among others).
	team4 := `{"id": 4, "type": "team", "attributes": {"name": "d2", "updatedAt": "` + day2 + `", "motto": "new"}}`
	c = streamTeams(t, s, runID,
		teamPage{rows: teamRows(t, teamJSON(1, "a", day1), teamJSON(2, "b", day1)), present: []int64{1, 2}},
		teamPage{rows: teamRows(t, teamJSON(3, "c-new", day2), team4, teamJSON(5, "e", day1)), present: []int64{3, 4, 5}},
	)
	if want := (warehouse.Counts{Inserted: 1, Updated: 1, Unchanged: 3, Deleted: 1}); c != want {
		t.Errorf("second list: %+v, want %+v", c, want)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE id = 6 AND deleted_at IS NOT NULL`); n != 1 {
		t.Error("team 6 not marked deleted")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.quarantine WHERE resource_id = '5' AND resolved_at IS NOT NULL`); n != 1 {
		t.Error("quarantine record of team 5 not resolved")
	}

	// Team 6 comes back; team 5 cannot be typed this time but was listed:
	// it stays live.
	synced := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE id IN (1, 2, 3) AND synced_at = (SELECT min(synced_at) FROM %[1]s.teams)`)
	c = streamTeams(t, s, 0,
		teamPage{rows: teamRows(t, teamJSON(1, "a", day1), teamJSON(2, "b", day1), teamJSON(3, "c-new", day2)), present: []int64{1, 2, 3}},
		teamPage{rows: teamRows(t, team4, teamJSON(6, "f2", day1)), bad: bad, present: []int64{4, 5, 6}},
	)
	if want := (warehouse.Counts{Updated: 1, Unchanged: 4, Quarantined: 1}); c != want {
		t.Errorf("third list: %+v, want %+v", c, want)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NULL`); n != 6 {
		t.Errorf("%d live teams, want 6", n)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE id IN (1, 2, 3) AND synced_at = (SELECT min(synced_at) FROM %[1]s.teams)`); n != synced {
		t.Error("unchanged rows were rewritten")
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.quarantine WHERE resource_id = '5' AND resolved_at IS NULL AND run_id IS NULL`); n != 1 {
		t.Error("second quarantine record of team 5 missing")
	}
}

// TestDimensionLoadNothingUntilFinish: staged pages change nothing a reader
// sees; a load closed before Finish, or whose context is cancelled part way,
// applies nothing, and its connection goes back to the pool.
func TestDimensionLoadNothingUntilFinish(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	const day1, day2 = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"
	streamTeams(t, s, 0, teamPage{rows: teamRows(t, teamJSON(1, "a", day1), teamJSON(2, "b", day1)), present: []int64{1, 2}})
	state := func() string {
		t.Helper()
		return fmt.Sprint(warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE id = 1 AND name = 'a' AND deleted_at IS NULL`),
			warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NULL`),
			warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams`),
			warehousetest.Count(t, s, `SELECT count(*) FROM %s.quarantine`))
	}
	before := state()
	bad := []warehouse.Quarantined{{Type: "team", ID: "9", Error: "x", Raw: []byte(`{}`)}}

	// Closed before Finish: team 1 changed, team 2 gone, team 3 new.
	ctx := context.Background()
	d, err := loadtest.Dimensions(t, s).Begin(ctx, "team", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Page(ctx, teamRows(t, teamJSON(1, "a2", day2), teamJSON(3, "c", day1)), bad, []int64{1, 3, 9}); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != before {
		t.Errorf("a staged page is visible: %s, was %s", got, before)
	}
	d.Close()
	d.Close()
	if got := state(); got != before {
		t.Errorf("a closed load changed the warehouse: %s, was %s", got, before)
	}
	if err := d.Page(ctx, nil, nil, []int64{1}); err == nil {
		t.Error("a closed load accepted a page")
	}
	if _, err := d.Finish(ctx); err == nil {
		t.Error("a closed load finished")
	}

	// Cancelled after the first page.
	cctx, cancel := context.WithCancel(ctx)
	d, err = loadtest.Dimensions(t, s).Begin(cctx, "team", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Page(cctx, teamRows(t, teamJSON(1, "a2", day2)), nil, []int64{1}); err != nil {
		t.Fatal(err)
	}
	cancel()
	err = d.Page(cctx, teamRows(t, teamJSON(3, "c", day1)), nil, []int64{3})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "staging teams: ") {
		t.Errorf("page with a cancelled context: %v", err)
	}
	if _, err := d.Finish(ctx); err == nil {
		t.Error("a failed load finished")
	}
	d.Close()
	if got := state(); got != before {
		t.Errorf("a cancelled load changed the warehouse: %s, was %s", got, before)
	}
	if n := schematest.AcquiredConns(s.Pool()); n != 0 {
		t.Errorf("%d connections still acquired", n)
	}

	// The next load is unaffected.
	c := streamTeams(t, s, 0, teamPage{rows: teamRows(t, teamJSON(1, "a", day1), teamJSON(3, "c", day1)), present: []int64{1, 3}})
	if want := (warehouse.Counts{Inserted: 1, Unchanged: 1, Deleted: 1}); c != want {
		t.Errorf("next load: %+v, want %+v", c, want)
	}
}

// TestDimensionLoadEmptyList: a list with no resource while the warehouse
// has live rows is refused, whether no page or only empty pages came, and
// changes nothing.
func TestDimensionLoadEmptyList(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	streamTeams(t, s, 0, teamPage{rows: teamRows(t, teamJSON(1, "a", "2024-01-01T00:00:00Z")), present: []int64{1}})
	for _, pages := range [][]teamPage{nil, {{}, {}}} {
		d, err := loadtest.Dimensions(t, s).Begin(ctx, "team", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pages {
			if err := d.Page(ctx, p.rows, p.bad, p.present); err != nil {
				t.Fatal(err)
			}
		}
		_, err = d.Finish(ctx)
		d.Close()
		var empty *dimensions.EmptyListError
		if !errors.As(err, &empty) || empty.Live != 1 || empty.Table != "teams" || !strings.HasPrefix(err.Error(), "loading teams: ") {
			t.Errorf("empty list of %d pages: %v", len(pages), err)
		}
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NULL`); n != 1 {
		t.Error("an empty list marked teams deleted")
	}
	// An empty list of an empty table is no refusal.
	d, err := loadtest.Dimensions(t, s).Begin(ctx, "role", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if c, err := d.Finish(ctx); err != nil || c != (warehouse.Counts{}) {
		t.Errorf("empty list of an empty table: %+v, %v", c, err)
	}
	if _, err := loadtest.Dimensions(t, s).Begin(ctx, "user", 0); err == nil {
		t.Error("users accepted as a dimension")
	}
}

// TestDimensionLoadDropsStaging: a load leaves no temporary table on its
// connection, whether it finished or was closed before, and the next load on
// that connection works.
func TestDimensionLoadDropsStaging(t *testing.T) {
	t.Parallel()
	pool, name := warehousetest.MigratedOn(t, schematest.NewPool(t, 1), "")
	s, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	leftovers := func() int64 {
		t.Helper()
		var n int64
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_class
			WHERE relnamespace = pg_catalog.pg_my_temp_schema() AND relname LIKE 'usersync\_dim\_%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	streamTeams(t, s, 0, teamPage{rows: teamRows(t, teamJSON(1, "a", "2024-01-01T00:00:00Z")), present: []int64{1}})
	if n := leftovers(); n != 0 {
		t.Errorf("%d staging tables left after Finish", n)
	}
	d, err := loadtest.Dimensions(t, s).Begin(ctx, "profile", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Page(ctx, nil, nil, []int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if n := leftovers(); n != 0 {
		t.Errorf("%d staging tables left after Close", n)
	}
	// The same connection loads teams again: statements it cached against
	// the dropped staging tables find the new ones.
	c := streamTeams(t, s, 0, teamPage{rows: teamRows(t, teamJSON(1, "a", "2024-01-01T00:00:00Z"), teamJSON(2, "b", "2024-01-01T00:00:00Z")), present: []int64{1, 2}})
	if want := (warehouse.Counts{Inserted: 1, Unchanged: 1}); c != want {
		t.Errorf("second load on the connection: %+v, want %+v", c, want)
	}
	if n := leftovers(); n != 0 {
		t.Errorf("%d staging tables left after the second Finish", n)
	}
}

// TestWrongGoType: a row holding a value of a Go type normalize never gives
// fails the list with an error naming the column.
func TestWrongGoType(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	teams := warehousetest.Rows(t, schema.Team(), `{"data": [{"id": 1, "type": "team", "attributes": {"name": "a"}}]}`)
	teams[0].Values[0] = time.Time{}
	if _, err := loadtest.LoadDimension(ctx, s, "team", teams, nil, []int64{1}, 0); err == nil ||
		!strings.Contains(err.Error(), "copying rows: encoding team 1, column name: a Go time.Time cannot be written as text") {
		t.Errorf("wrong Go type in a dimension: %v", err)
	}
}

func TestLoadDimension(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	team := func(id int, name string) string {
		return fmt.Sprintf(`{"id": %d, "type": "team", "attributes": {"name": %q, "updatedAt": "2024-01-01T00:00:00Z"}}`, id, name)
	}
	load := func(present []int64, items ...string) warehouse.Counts {
		t.Helper()
		body := `{"data": [`
		for i, it := range items {
			if i > 0 {
				body += ","
			}
			body += it
		}
		c, err := loadtest.LoadDimension(ctx, s, "team", warehousetest.Rows(t, schema.Team(), body+`]}`), nil, present, 0)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := load([]int64{1, 2}, team(1, "a"), team(2, "b")); c.Inserted != 2 {
		t.Errorf("insert %+v", c)
	}
	if c := load([]int64{1}, team(1, "a")); c.Deleted != 1 || c.Unchanged != 1 {
		t.Errorf("delete %+v", c)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE id = 2 AND deleted_at IS NOT NULL`); n != 1 {
		t.Error("team 2 not marked deleted")
	}
	if c := load([]int64{1, 2}, team(1, "a"), team(2, "b")); c.Updated != 1 || c.Deleted != 0 {
		t.Errorf("undelete %+v", c)
	}
	if n := warehousetest.Count(t, s, `SELECT count(*) FROM %s.teams WHERE deleted_at IS NULL`); n != 2 {
		t.Error("team 2 not undeleted")
	}
	_, err := loadtest.LoadDimension(ctx, s, "team", nil, nil, nil, 0)
	var empty *dimensions.EmptyListError
	if !errors.As(err, &empty) || empty.Live != 2 {
		t.Errorf("empty list: %v", err)
	}
}
