package normalize

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsondoc"
)

func userValue(t *testing.T, typed Typed, name string) any {
	t.Helper()
	for i, a := range schema.User().Attributes {
		if a.Name == name {
			return typed.Values[i]
		}
	}
	t.Fatalf("no attribute %s", name)
	return nil
}

func TestTypeAttributes(t *testing.T) {
	t.Parallel()
	a := NewAttributes(schema.User())
	raw := `{"accountsViewId": 12, "locked": true, "firstName": "Zoë \"Z\" 李", "updatedAt": "2024-05-01T12:34:56.789Z",
		"createdAt": "2020-01-02T03:04:05Z", "duties": {"d": [1, 2]}, "title": null, "languagePreference": "fr", "onboardedAt": null}`
	typed, err := a.Type([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]any{
		"accountsViewId": int64(12), "locked": true, "firstName": `Zoë "Z" 李`, "title": nil, "email": nil,
		"updatedAt": time.Date(2024, 5, 1, 12, 34, 56, 789e6, time.UTC),
		"createdAt": time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	for name, want := range checks {
		got := userValue(t, typed, name)
		if gt, ok := got.(time.Time); ok {
			if !gt.Equal(want.(time.Time)) || gt.Location() != time.UTC {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	if d, _ := userValue(t, typed, "duties").([]byte); string(d) != `{"d": [1, 2]}` {
		t.Errorf("duties = %q", d)
	}
	if strings.Join(typed.Unknown, ",") != "languagePreference,onboardedAt" {
		t.Errorf("unknown = %v", typed.Unknown)
	}
}

func TestTypeAttributesErrors(t *testing.T) {
	t.Parallel()
	a := NewAttributes(schema.User())
	tests := []struct {
		raw, field, reason string
	}{
		{`{"locked": "yes"}`, "locked", "expected boolean, got string"},
		{`{"accountsViewId": "12"}`, "accountsViewId", "expected integer, got string"},
		{`{"accountsViewId": 1.5}`, "accountsViewId", "not a 64-bit integer"},
		{`{"accountsViewId": 99999999999999999999}`, "accountsViewId", "not a 64-bit integer"},
		{`{"firstName": 7}`, "firstName", "expected string, got number"},
		{`{"updatedAt": "yesterday"}`, "updatedAt", "ISO 8601"},
		{`{"updatedAt": 1700000000}`, "updatedAt", "expected datetime, got number"},
		{`{"duties": "sdr"}`, "duties", "expected object, got string"},
		{`{"title": "a\u0000b"}`, "title", "NUL"},
		{`{"title": "a\\u0000b", "newThing": {"x": ["\u0000"]}}`, "newThing", "NUL"},
		{"{\"title\": \"a\xffb\"}", "title", "not UTF-8"},
		{"{\"newThing\": [\"a\xc3\"]}", "newThing", "not UTF-8"},
		{`{"duties": {"a": "\ud800"}}`, "duties", "surrogate"},
		{`{"newThing": "\udc00\ud800"}`, "newThing", "surrogate"},
		{`{"new\u0000Thing": 1}`, "attributes", "an attribute name holds a NUL"},
		{"{\"new\xffThing\": 1}", "attributes", "an attribute name holds bytes that are not UTF-8"},
		{`[1]`, "attributes", "expected an object"},
	}
	for _, tt := range tests {
		_, err := a.Type([]byte(tt.raw))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Reason, tt.reason) {
			t.Errorf("%s: err = %v, want field %s reason %q", tt.raw, err, tt.field, tt.reason)
		}
		if err != nil && strings.Contains(err.Error(), "sdr") {
			t.Errorf("%s: error echoes the value: %v", tt.raw, err)
		}
	}
	for _, empty := range []string{"", "null", "{}"} {
		typed, err := a.Type([]byte(empty))
		if err != nil || len(typed.Values) != len(schema.User().Attributes) {
			t.Errorf("%q: %v", empty, err)
		}
	}
}

func decodeOne(t *testing.T, body string) jsondoc.Resource {
	t.Helper()
	doc, err := jsondoc.Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc.Data[0]
}

func TestUserRow(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	r := decodeOne(t, `{"data": {"id": 7, "type": "user", "attributes": {"updatedAt": "2024-05-01T12:00:00.5Z", "email": "a@b.c"},
		"relationships": {
			"role": {"data": {"id": 3, "type": "role"}},
			"profile": {"data": null},
			"creator": {"links": {"related": "x"}},
			"teams": {"data": [{"id": 1, "type": "team"}, {"id": 2, "type": "team"}]},
			"mailboxes": {"data": []},
			"contentCategories": {"data": [{"id": 9, "type": "contentCategory"}]},
			"recipients": {"links": {"related": "y"}},
			"jobRole": {"data": {"id": 4, "type": "jobRole"}}
		}}}`)
	row, err := n.Row(r)
	if err != nil {
		t.Fatal(err)
	}
	if row.ID != 7 || !row.UpdatedAt.Equal(time.Date(2024, 5, 1, 12, 0, 0, 5e8, time.UTC)) {
		t.Errorf("row = %+v", row)
	}
	rels := schema.User().ToOne()
	want := map[string]ToOne{"role": {ID: 3, Valid: true, Sent: true}, "profile": {Sent: true}, "creator": {}, "updater": {}, "mailbox": {}}
	for i, rel := range rels {
		if row.ToOne[i] != want[rel.Name] {
			t.Errorf("%s = %+v, want %+v", rel.Name, row.ToOne[i], want[rel.Name])
		}
	}
	if !row.TeamsSent || len(row.Teams) != 2 || row.Teams[0] != 1 || row.Teams[1] != 2 {
		t.Errorf("teams = %v %v", row.TeamsSent, row.Teams)
	}
	if strings.Join(row.LinksSent, ",") != "contentCategories,jobRole,mailboxes" {
		t.Errorf("links sent = %v", row.LinksSent)
	}
	if len(row.Links) != 2 || row.Links[0] != (Link{"contentCategories", "contentCategory", 9}) || row.Links[1] != (Link{"jobRole", "jobRole", 4}) {
		t.Errorf("links = %+v", row.Links)
	}
}

func TestTeamsWithoutData(t *testing.T) {
	t.Parallel()
	row, err := New(schema.User()).Row(decodeOne(t, `{"data": {"id": 1, "type": "user", "attributes": {},
		"relationships": {"teams": {"links": {"related": "/api/v2/teams?filter[users][id]=1"}}}}}`))
	if err != nil || row.TeamsSent {
		t.Errorf("teams without data: sent=%v err=%v", row.TeamsSent, err)
	}
}

func TestRowErrors(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	for _, body := range []string{
		`{"data": {"id": 1, "type": "team", "attributes": {}}}`,
		`{"data": {"id": 1, "type": "user", "relationships": {"role": {"data": [{"id": 1, "type": "role"}]}}}}`,
		`{"data": {"id": 1, "type": "user", "relationships": {"teams": {"data": {"id": 1, "type": "team"}}}}}`,
		`{"data": {"id": 1, "type": "user", "attributes": {"locked": 1}}}`,
		`{"data": {"id": "u-1", "type": "user", "attributes": {}}}`,
		`{"data": {"id": 1, "type": "user", "relationships": {"teams": {"data": [{"id": "t", "type": "team"}]}}}}`,
	} {
		if _, err := n.Row(decodeOne(t, body)); err == nil {
			t.Errorf("%s: no error", body)
		}
	}
}

func TestHashChangesWithContent(t *testing.T) {
	t.Parallel()
	n := New(schema.Role())
	a, _ := n.Row(decodeOne(t, `{"data": {"id": 1, "type": "role", "attributes": {"name": "VP"}, "relationships": {"parentRole": {"data": {"id": 2, "type": "role"}}}}}`))
	b, _ := n.Row(decodeOne(t, `{"data": {"id": 1, "type": "role", "attributes": {"name": "VP"}, "relationships": {"parentRole": {"data": {"id": 3, "type": "role"}}}}}`))
	c, _ := n.Row(decodeOne(t, `{"data": {"id": 1, "type": "role", "attributes": {"name": "VP"}, "relationships": {"parentRole": {"data": {"id": 2, "type": "role"}}}}}`))
	if string(a.Hash()) == string(b.Hash()) || string(a.Hash()) != string(c.Hash()) {
		t.Error("hash does not follow content")
	}
}

func FuzzTypeAttributes(f *testing.F) {
	f.Add([]byte(`{"locked": true, "accountsViewId": 3, "duties": {"a": [1]}, "updatedAt": "2024-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"x": "\u00e9", "name": "a\"b"}`))
	f.Add([]byte(`null`))
	a := NewAttributes(schema.User())
	f.Fuzz(func(t *testing.T, raw []byte) {
		typed, err := a.Type(raw)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if len(typed.Values) != len(schema.User().Attributes) {
			t.Fatal("wrong number of values")
		}
	})
}

// pinnedUser has every part a hash covers: attributes, to-ones, data
// connections (keys out of order), teams (out of order) and other linkage.
const pinnedUser = `{"data": {"id": 7, "type": "user",
	"attributes": {"firstName": "Ada", "locked": false, "updatedAt": "2024-05-01T12:34:56.789Z"},
	"relationships": {"role": {"data": {"id": 4, "type": "role"}}, "profile": {"data": null},
		"teams": {"data": [{"id": 9, "type": "team"}, {"id": 2, "type": "team"}]},
		"mailboxes": {"data": [{"id": 11, "type": "mailbox"}]}, "recipients": {"data": []}},
	"meta": {"canWrite": true, "dataConnections": [{"provider": "hubspot", "connected": true, "externalId": "1"}]}}}`

// TestHashesAreStable pins the hashes of one user. Warehouses store them
// (users.content_hash, linkage_hash) and compare every later sync against
// them: a change here rewrites every user and versions each one again, so it
// needs a migration, not a new constant (0008_content_hash made the hash one
// of the stored row: usersync migrate hashes every stored row again).
func TestHashesAreStable(t *testing.T) {
	t.Parallel()
	r, err := New(schema.User()).Row(decodeOne(t, pinnedUser))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%x", r.Hash()), "7443a1d5e38c5ff10893c71e171ca7eb1b83ff5ea6bcb63d15fcd41998e74cfa"; got != want {
		t.Errorf("content hash %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("%x", r.LinkageHash()), "2f2b99d8b5379d54753f3530ec5864239edbc38c1730a9f22a01ee8b61ca1044"; got != want {
		t.Errorf("linkage hash %s, want %s", got, want)
	}
}
