package warehouse_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/loadtest"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

// TestQuarantineStoresAnything: a quarantine record holding what PostgreSQL
// cannot store as sent (NULs, bytes that are not UTF-8, lone surrogate
// escapes, an id of thousands of digits, nesting deeper than jsonb parses,
// raw that is not JSON) is stored escaped, with the users of its page and
// in a dimension list.
func TestQuarantineStoresAnything(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	deep := strings.Repeat(`{"a":[`, 50_000) + "1" + strings.Repeat("]}", 50_000)
	tests := []struct {
		name string
		q    warehouse.Quarantined
		raw  string // what raw must hold, as jsonb text (a substring)
	}{
		{"NUL escape in raw", warehouse.Quarantined{ID: "1", Raw: []byte(`{"id":1,"a":"x\u0000y","b":"\\u0000"}`)}, `"a": "x�y", "b": "\\u0000"`},
		{"NUL in id", warehouse.Quarantined{ID: "1\x002", Raw: []byte(`{"id":"1\u00002"}`)}, `"id": "1�2"`},
		{"invalid UTF-8", warehouse.Quarantined{ID: "\xff", Field: "a\xff", Error: "a\xff: bad", Raw: []byte("{\"id\":\"\xff\",\"\xfe\":\"a\xc3\"}")}, `"�": "a�"`},
		{"lone surrogates", warehouse.Quarantined{ID: "3", Raw: []byte(`{"a":"\ud800","b":"\udc00\ud834\udd1e","c":"\ud800\u0041"}`)}, `"a": "�", "b": "�𝄞", "c": "�A"`},
		{"long id", warehouse.Quarantined{ID: strings.Repeat("9", 5000), Raw: []byte(`{"id":` + strings.Repeat("9", 5000) + `}`)}, `"id": 9999`},
		{"deep", warehouse.Quarantined{ID: "4", Field: "newThing", Raw: []byte(`{"id":4,"x":` + deep + `}`)}, `"{\"id\":4,\"x\":{\"a\":[{`},
		{"terminal escapes and 5 MB", warehouse.Quarantined{ID: "6", Field: "a\x1b[31mb", Error: "\x1b[2J" + strings.Repeat("e", 5<<20), Raw: []byte(`{"id":6}`)}, `"id": 6`},
		{"not JSON", warehouse.Quarantined{ID: "5", Raw: []byte("{\"id\":5,\x00\"a\":\xff}")}, `"{\"id\":5,�\"a\":�}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.Type = "user"
			if q.Error == "" {
				q.Error = "x"
			}
			c, err := loadtest.Users(t, s).Write(ctx, nil, []warehouse.Quarantined{q}, nil)
			if err != nil || c.Quarantined != 1 {
				t.Fatalf("LoadUsers: %v, %+v", err, c)
			}
			q.Type = "team"
			load, err := loadtest.Dimensions(t, s).Begin(ctx, "team", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer load.Close()
			if err := load.Page(ctx, nil, []warehouse.Quarantined{q}, []int64{1}); err != nil {
				t.Fatal(err)
			}
			if _, err := load.Finish(ctx); err != nil {
				t.Fatal(err)
			}
			rows, err := s.Pool().Query(ctx, `SELECT resource_id, field, error, raw::text FROM "`+s.Schema()+`".quarantine
				WHERE quarantine_id > (SELECT coalesce(max(quarantine_id), 0) - 2 FROM "`+s.Schema()+`".quarantine)`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				n++
				var id, field, errText, raw string
				if err := rows.Scan(&id, &field, &errText, &raw); err != nil {
					t.Fatal(err)
				}
				if len(id) > 64 || !utf8.ValidString(id+field+errText) || strings.ContainsFunc(field+errText, unicode.IsControl) ||
					len(errText) > warehouse.MaxErrorText {
					t.Errorf("resource_id %q field %q error %q", id, field, errText)
				}
				if !json.Valid([]byte(raw)) || !strings.Contains(raw, tt.raw) {
					t.Errorf("raw %.200s, want it to hold %s", raw, tt.raw)
				}
			}
			if n != 2 {
				t.Errorf("%d records", n)
			}
		})
	}
	if n := warehousetest.Count(t, s, `SELECT count(DISTINCT resource_id) FROM %s.quarantine WHERE resource_id LIKE '999%%'`); n != 1 {
		t.Errorf("%d long ids", n)
	}
}
