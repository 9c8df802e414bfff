package jsonapi

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestFormatTimeTruncatesToMillisecondsUTC(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("X", 2*3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 22, 12, 15, 0, 123999999, zone), "2026-11-22T10:15:00.123Z"},
		{time.Date(2026, 11, 22, 10, 15, 59, 999999999, time.UTC), "2026-11-22T10:15:59.999Z"},
		{time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC), "2026-11-22T10:15:00.000Z"},
		{time.Date(2026, 11, 22, 10, 15, 0, 1000000, time.UTC), "2026-11-22T10:15:00.001Z"},
	}
	for _, tt := range tests {
		if got := FormatTime(tt.in); got != tt.want {
			t.Errorf("FormatTime(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestQueryEncode(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 22, 10, 15, 0, 123456789, time.UTC)
	to := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		q    Query
		want map[string]string
	}{
		{"zero query sends count=false", Query{}, map[string]string{"count": "false"}},
		{"open range", Query{}.Filter("updatedAt", Range(from, time.Time{})).Sort("updatedAt").PageSize(1000),
			map[string]string{"filter[updatedAt]": "2026-11-22T10:15:00.123Z..inf", "sort": "updatedAt",
				"page[size]": "1000", "count": "false"}},
		{"closed range", Query{}.Filter("updatedAt", Range(from, to)),
			map[string]string{"filter[updatedAt]": "2026-11-22T10:15:00.123Z..2026-11-23T00:00:00.000Z", "count": "false"}},
		{"no end at all", Query{}.Filter("createdAt", Range(time.Time{}, time.Time{})),
			map[string]string{"filter[createdAt]": "inf..inf", "count": "false"}},
		{"open start", Query{}.Filter("updatedAt", Range(time.Time{}, to)),
			map[string]string{"filter[updatedAt]": "inf..2026-11-23T00:00:00.000Z", "count": "false"}},
		{"id list", Query{}.Filter("id", IDs(1, 2, 3)), map[string]string{"filter[id]": "1,2,3", "count": "false"}},
		{"id range", Query{}.Filter("id", StringRange("100", "")), map[string]string{"filter[id]": "100..inf", "count": "false"}},
		{"relationship ids", Query{}.FilterRelationship("teams", 4, 5),
			map[string]string{"filter[teams][id]": "4,5", "count": "false"}},
		{"relationship id via dot", Query{}.Filter("role.id", IDs(9)),
			map[string]string{"filter[role][id]": "9", "count": "false"}},
		{"value and values", Query{}.Filter("email", Value("a@b.c")).Filter("username", Values("a", "b")),
			map[string]string{"filter[email]": "a@b.c", "filter[username]": "a,b", "count": "false"}},
		{"time value", Query{}.Filter("updatedAt", Time(from)),
			map[string]string{"filter[updatedAt]": "2026-11-22T10:15:00.123Z", "count": "false"}},
		{"several sorts", Query{}.Sort("updatedAt", "-id").Sort("lastName"),
			map[string]string{"sort": "updatedAt,-id,lastName", "count": "false"}},
		{"include and fields", Query{}.Include("role", "teams").Fields("user").Fields("role", "name", "updatedAt"),
			map[string]string{"include": "role,teams", "fields[user]": "", "fields[role]": "name,updatedAt", "count": "false"}},
		{"count true", Query{}.Count(true), map[string]string{"count": "true"}},
		{"flags", Query{}.ProvideDataConnections().ProvideAuthorizationMeta(),
			map[string]string{"provideDataConnections": "true", "provideAuthorizationMeta": "true", "count": "false"}},
		{"later filter replaces", Query{}.Filter("id", IDs(1)).Filter("id", IDs(2)),
			map[string]string{"filter[id]": "2", "count": "false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := tt.q.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := url.ParseQuery(raw)
			if err != nil {
				t.Fatalf("ParseQuery(%q): %v", raw, err)
			}
			assertQuery(t, got, tt.want)
		})
	}
}

func TestQueryEncodeIsDeterministicAndExact(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 22, 10, 15, 0, 123999000, time.UTC)
	q := Query{}.PageSize(1000).Fields("user").Sort("updatedAt").
		Filter("updatedAt", Range(from, time.Time{})).FilterRelationship("teams", 1, 2)
	want := "count=false&fields%5Buser%5D=&filter%5Bteams%5D%5Bid%5D=1%2C2" +
		"&filter%5BupdatedAt%5D=2026-11-22T10%3A15%3A00.123Z..inf&page%5Bsize%5D=1000&sort=updatedAt"
	for range 3 {
		got, err := q.Encode()
		if err != nil || got != want {
			t.Fatalf("Encode() = %q, %v\nwant %q", got, err, want)
		}
	}
}

func TestQueryIsImmutable(t *testing.T) {
	t.Parallel()
	base := Query{}.Filter("id", IDs(1)).Sort("id")
	a := base.Filter("email", Value("a"))
	b := base.Filter("email", Value("b")).Sort("-updatedAt")
	encA, _ := a.Encode()
	encB, _ := b.Encode()
	encBase, _ := base.Encode()
	if !strings.Contains(encA, "email%5D=a") || strings.Contains(encA, "updatedAt") {
		t.Errorf("a = %s", encA)
	}
	if !strings.Contains(encB, "email%5D=b") || !strings.Contains(encB, "sort=id%2C-updatedAt") {
		t.Errorf("b = %s", encB)
	}
	if strings.Contains(encBase, "email") {
		t.Errorf("base changed: %s", encBase)
	}
}

func TestQueryRefusesDeprecatedForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		q           Query
		param       string
		replacement string
	}{
		{"sort by relationship attribute", Query{}.Sort("role.name"), "sort", `Include("role")`},
		{"descending sort by relationship attribute", Query{}.Sort("updatedAt,-role.name"), "sort", `Include("role")`},
		{"filter by relationship attribute (dot)", Query{}.Filter("role.name", Value("x")), "filter[role][name]", `FilterRelationship("role"`},
		{"filter by relationship attribute (brackets)", Query{}.Filter("role][name", Value("x")), "filter[role][name]", "filter[role][id]"},
		{"filter by relationship attribute (nested)", Query{}.Filter("teams[name]", Value("x")), "filter[teams][name]", "filter[teams][id]"},
	}
	for _, tt := range tests {
		_, err := tt.q.Encode()
		var qe *QueryError
		if !errors.As(err, &qe) || !qe.Deprecated || qe.Param != tt.param {
			t.Errorf("%s: error %v, want a deprecated *QueryError on %s", tt.name, err, tt.param)
			continue
		}
		if !strings.Contains(err.Error(), tt.replacement) || !strings.Contains(err.Error(), "§9.3") {
			t.Errorf("%s: error %q does not name the replacement %s", tt.name, err, tt.replacement)
		}
	}
}

func TestQueryRefusesInvalidUse(t *testing.T) {
	t.Parallel()
	later := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for name, q := range map[string]Query{
		"empty filter attribute": Query{}.Filter("", Value("x")),
		"empty id list":          Query{}.Filter("id", IDs()),
		"comma in a value":       Query{}.Filter("name", Values("a,b")),
		"reversed range":         Query{}.Filter("updatedAt", Range(later, later.Add(-time.Hour))),
		"zero page size":         Query{}.PageSize(0),
		"empty sort key":         Query{}.Sort("-"),
		"empty include":          Query{}.Include(""),
		"empty fields type":      Query{}.Fields(""),
		"bad relationship":       Query{}.FilterRelationship("a.b", 1),
		"error sticks":           Query{}.PageSize(0).Sort("id").PageSize(10),
	} {
		var qe *QueryError
		if _, err := q.Encode(); !errors.As(err, &qe) || qe.Deprecated {
			t.Errorf("%s: error %v, want a non-deprecated *QueryError", name, err)
		}
	}
}

// assertQuery compares decoded query values with want, one value per key.
func assertQuery(t *testing.T, got url.Values, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if vs, ok := got[k]; !ok || len(vs) != 1 || vs[0] != v {
			t.Errorf("query %s = %q, want %q", k, vs, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected query parameter %s=%q", k, got[k])
		}
	}
}
