package syncer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func (e *testEnv) dataConnections(t *testing.T) map[int64]any {
	t.Helper()
	rows, err := e.store.Pool().Query(context.Background(), fmt.Sprintf(`SELECT id, data_connections FROM %s.users`,
		pgx.Identifier{e.store.Schema()}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]any{}
	for rows.Next() {
		var id int64
		var dc []byte
		if err := rows.Scan(&id, &dc); err != nil {
			t.Fatal(err)
		}
		var v any
		if dc != nil {
			_ = json.Unmarshal(dc, &v)
		}
		out[id] = v
	}
	return out
}

// TestDataConnections: users.data_connections holds each user's
// meta.dataConnections; a sync with the flag off leaves it alone and writes
// no version; the API user's write access is recorded per run.
func TestDataConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 600})
	sum := e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	got := e.dataConnections(t)
	filled := 0
	for _, u := range e.sim.Users() {
		var want any
		_ = json.Unmarshal(u.DataConnections, &want)
		if !reflect.DeepEqual(got[u.ID], want) {
			t.Fatalf("user %d: data_connections %v, simulator %v", u.ID, got[u.ID], want)
		}
		if want != nil {
			filled++
		}
	}
	if filled == 0 {
		t.Fatal("the simulator sent no data connections")
	}
	if sum.CanWrite == nil || !*sum.CanWrite {
		t.Errorf("can_write of the run = %v, want true", sum.CanWrite)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE can_write`); n != 1 {
		t.Errorf("runs recording write access: %d", n)
	}

	// Flag off: nothing sent, nothing nulled, no version.
	versions := e.count(t, `SELECT count(*) FROM %s.user_versions`)
	e.sim.UpdateUsers(0)
	e.run(t, syncer.Config{NoDataConnections: true}, syncer.Request{Kind: warehouse.KindFull})
	if after := e.dataConnections(t); !reflect.DeepEqual(after, got) {
		t.Error("a sync without data connections changed the stored values")
	}
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions`); n != versions {
		t.Errorf("versions %d → %d with the flag off", versions, n)
	}

	// Read-only tokens are reported as such.
	if err := e.sim.UpdateKnobs(func(k *apisim.Knobs) { k.DenyWrite = true }); err != nil {
		t.Fatal(err)
	}
	sum = e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	if sum.CanWrite == nil || *sum.CanWrite {
		t.Errorf("can_write with a read-only token = %v, want false", sum.CanWrite)
	}
	st, err := e.store.Status(context.Background(), 1)
	if err != nil || st.CanWrite == nil || *st.CanWrite {
		t.Errorf("status can_write = %v (%v)", st.CanWrite, err)
	}
}

// TestDeprecatedQueriesRefused: the query forms the API deprecated (sorting
// or filtering by a relationship's attribute) are refused before anything is
// sent, with an error naming the replacement.
func TestDeprecatedQueriesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, apisim.Options{Users: 10})
	before := e.sim.Stats().Requests
	for _, q := range []jsonapi.Query{
		jsonapi.Query{}.Sort("role.name"),
		jsonapi.Query{}.Filter("role.name", jsonapi.Value("VP")),
	} {
		_, err := e.client.Collection("users", q).Next(context.Background())
		var qe *jsonapi.QueryError
		if !errors.As(err, &qe) || !qe.Deprecated {
			t.Errorf("deprecated query: %v, want a *QueryError marked deprecated", err)
		}
	}
	if after := e.sim.Stats().Requests; after != before {
		t.Errorf("%d requests sent for refused queries", after-before)
	}
}
