package syncer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// poisonAPI serves the simulator with resource added first to every page of
// path (e.g. /api/v2/users) it lists.
func poisonAPI(path, resource string) func(*apisim.Server) http.Handler {
	return func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				sim.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			if i := bytes.Index(body, []byte(`"data":[`)); rec.Code == http.StatusOK && i >= 0 {
				i += len(`"data":[`)
				sep := ","
				if body[i] == ']' {
					sep = ""
				}
				body = append(append([]byte(string(body[:i])+resource), sep...), body[i:]...)
			}
			for k, v := range rec.Header() {
				if k != "Content-Length" {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	}
}

// TestPoisonedResourceQuarantined: one resource holding what PostgreSQL
// cannot store (NULs, bytes that are not UTF-8, lone surrogates, ids of
// thousands of digits) or nested 10,000 levels deep, among good ones, is
// quarantined whole and escaped; the page commits and the run succeeds.
func TestPoisonedResourceQuarantined(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":[`, 5_000) + "1" + strings.Repeat("]}", 5_000)
	user := func(id, attrs, rest string) string {
		return `{"type":"user","id":` + id + `,"attributes":{"updatedAt":"2024-01-01T00:00:00.000Z"` + attrs + `}` + rest + `}`
	}
	team := func(id, attrs string) string {
		return `{"type":"team","id":` + id + `,"attributes":{"updatedAt":"2024-01-01T00:00:00.000Z"` + attrs + `}}`
	}
	tests := []struct {
		name, path, resource, field string
	}{
		{"NUL in a string id", "/api/v2/users", user(`"90\u00001"`, ``, ``), "id"},
		{"an id of 5000 digits", "/api/v2/users", user(strings.Repeat("7", 5000), ``, ``), "id"},
		{"an id beyond int64", "/api/v2/users", user(`92233720368547758079`, ``, ``), "id"},
		{"NUL in an attribute", "/api/v2/users", user(`901`, `,"firstName":"a\u0000b"`, ``), "firstName"},
		{"bytes not UTF-8 in an attribute", "/api/v2/users", user(`901`, ",\"title\":\"CEO\xff\xfe\"", ``), "title"},
		{"a lone surrogate in an unknown attribute", "/api/v2/users", user(`901`, `,"newThing":["\ud800"]`, ``), "newThing"},
		{"NUL in an unknown relationship's name", "/api/v2/users", user(`901`, ``, `,"relationships":{"x\u0000":{"data":[{"type":"x","id":1}]}}`), "relationships"},
		{"NUL in an unknown relationship's type", "/api/v2/users", user(`901`, ``, `,"relationships":{"mailboxes":{"data":[{"type":"mail\u0000box","id":1}]}}`), "relationships.mailboxes"},
		{"NUL in a data connection", "/api/v2/users", user(`901`, ``, `,"meta":{"dataConnections":[{"provider":"\u0000"}]}`), "meta.dataConnections"},
		{"nesting 10,000 deep in an attribute", "/api/v2/users", user(`901`, `,"newThing":`+deep, ``), "newThing"},
		{"nesting 10,000 deep in meta", "/api/v2/users", user(`901`, ``, `,"meta":{"x":`+deep+`}`), "meta"},
		{"nesting 10,000 deep in an unknown relationship", "/api/v2/users", user(`901`, ``, `,"relationships":{"x":{"meta":`+deep+`}}`), "relationships"},
		{"NUL in a team name", "/api/v2/teams", team(`901`, `,"name":"a\u0000b"`), "name"},
		{"bytes not UTF-8 in a team name", "/api/v2/teams", team(`901`, ",\"name\":\"\xc3(\""), "name"},
		{"nesting 10,000 deep in a team", "/api/v2/teams", team(`901`, `,"x":`+deep), "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, apisim.Options{Users: 30}, poisonAPI(tt.path, tt.resource))
			sum, err := runAlone(t, context.Background(), e.syncer(syncer.Config{}), syncer.Request{Kind: warehouse.KindFull})
			if err != nil {
				t.Fatalf("run failed: %v", err)
			}
			quarantined := sum.Quarantined
			if tt.path == "/api/v2/teams" {
				quarantined = sum.Dimensions["teams"].Quarantined
				if n := e.count(t, `SELECT count(*) FROM %s.teams`); n != int64(len(e.sim.Resources("team"))) {
					t.Errorf("%d teams stored, want %d", n, len(e.sim.Resources("team")))
				}
			}
			if quarantined != 1 {
				t.Errorf("%d quarantined, want 1", quarantined)
			}
			if n := e.count(t, `SELECT count(*) FROM %s.users`); n != 30 {
				t.Errorf("%d users stored, want 30", n)
			}
			var id, field, errText string
			var raw []byte
			err = e.store.Pool().QueryRow(context.Background(), `SELECT resource_id, field, error, raw::text FROM "`+
				e.store.Schema()+`".quarantine`).Scan(&id, &field, &errText, &raw)
			if err != nil {
				t.Fatal(err)
			}
			if field != tt.field || !strings.HasPrefix(errText, tt.field+": ") {
				t.Errorf("field %q error %q, want them to name %s", field, errText, tt.field)
			}
			if len(id) > 64 || id == "" {
				t.Errorf("resource_id %q", id)
			}
			if _, err := strconv.ParseInt(id, 10, 64); err != nil && tt.field != "id" {
				t.Errorf("resource_id %q is not the id sent", id)
			}
			if !json.Valid(raw) || !bytes.Contains(raw, []byte(`"type": "`)) && !bytes.Contains(raw, []byte(`\"type\":\"`)) {
				t.Errorf("raw %.300s", raw)
			}
		})
	}
}
