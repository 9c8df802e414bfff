package jsondoc

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeDocumentRelationshipCases(t *testing.T) {
	t.Parallel()
	body := `{"data":[{"id":7,"type":"user","attributes":{"email":"a@b.c","newField":{"x":[1,2]}},
		"relationships":{
			"recipients":{"links":{"related":"https://h/api/v2/users/7/recipients"}},
			"onlyMeta":{"meta":{"count":3}},
			"mailbox":{"data":null},
			"role":{"data":{"id":3,"type":"role"}},
			"profile":{"data":{"type":"profile","id":"42"}},
			"teams":{"data":[{"id":1,"type":"team"},{"id":"2","type":"team"}],"links":{"related":"https://h/t"},"meta":{"n":2}},
			"mailboxes":{"data":[]},
			"creator":{"data":{"id":5,"type":"user","meta":{"why":"x"}}},
			"contentCategories":{"data":[ {"type":"content\u0043ategory","id":9} ]}
		},
		"links":{"self":"https://h/api/v2/users/7"},"meta":{"canWrite":true}}]}`
	doc, err := Decode([]byte(body))
	if err != nil {
		t.Fatalf("DecodeDocument: %v", err)
	}
	if doc.DataShape != ShapeMany || len(doc.Data) != 1 {
		t.Fatalf("data shape %v with %d resources", doc.DataShape, len(doc.Data))
	}
	r := doc.Data[0]
	if r.ID != 7 || r.Type != "user" || string(r.Links.Self) != "https://h/api/v2/users/7" {
		t.Errorf("resource = %d %q %q", r.ID, r.Type, r.Links.Self)
	}
	if !strings.Contains(string(r.Attributes), `"newField":{"x":[1,2]}`) {
		t.Errorf("attributes lost an unknown field: %s", r.Attributes)
	}
	if string(r.Meta) != `{"canWrite":true}` {
		t.Errorf("meta = %s", r.Meta)
	}
	tests := []struct {
		name    string
		shape   Shape
		ids     []Identifier
		related string
		meta    string
	}{
		{"recipients", ShapeAbsent, nil, "https://h/api/v2/users/7/recipients", ""},
		{"onlyMeta", ShapeAbsent, nil, "", `{"count":3}`},
		{"mailbox", ShapeNull, nil, "", ""},
		{"role", ShapeOne, []Identifier{{ID: 3, Type: "role"}}, "", ""},
		{"profile", ShapeOne, []Identifier{{ID: 42, Type: "profile"}}, "", ""},
		{"teams", ShapeMany, []Identifier{{ID: 1, Type: "team"}, {ID: 2, Type: "team"}}, "https://h/t", `{"n":2}`},
		{"mailboxes", ShapeMany, []Identifier{}, "", ""},
		{"creator", ShapeOne, []Identifier{{ID: 5, Type: "user", Meta: []byte(`{"why":"x"}`)}}, "", ""},
		{"contentCategories", ShapeMany, []Identifier{{ID: 9, Type: "contentCategory"}}, "", ""},
	}
	for _, tt := range tests {
		rel, ok := r.Relationships[tt.name]
		if !ok {
			t.Errorf("%s: missing", tt.name)
			continue
		}
		if rel.Data.Shape != tt.shape {
			t.Errorf("%s: shape %v, want %v", tt.name, rel.Data.Shape, tt.shape)
		}
		if !reflect.DeepEqual(rel.Data.IDs, tt.ids) && !(len(rel.Data.IDs) == 0 && len(tt.ids) == 0) {
			t.Errorf("%s: ids %+v, want %+v", tt.name, rel.Data.IDs, tt.ids)
		}
		if tt.shape == ShapeMany && rel.Data.IDs == nil {
			t.Errorf("%s: an empty to-many must be a non-nil empty slice", tt.name)
		}
		if string(rel.Links.Related) != tt.related || string(rel.Meta) != tt.meta {
			t.Errorf("%s: links.related %q meta %s", tt.name, rel.Links.Related, rel.Meta)
		}
	}
	if id, ok := r.Relationships["role"].Data.One(); !ok || id.ID != 3 {
		t.Errorf("One() = %+v, %v", id, ok)
	}
	if _, ok := r.Relationships["teams"].Data.One(); ok {
		t.Error("One() on a to-many linkage reported ok")
	}
}

func TestDecodeDocumentShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body  string
		shape Shape
		n     int
	}{
		{`{"data":{"id":"1","type":"user"}}`, ShapeOne, 1},
		{`{"data":null}`, ShapeNull, 0},
		{`{"data":[]}`, ShapeMany, 0},
		{`{"meta":{"count":null}}`, ShapeAbsent, 0},
		{`{"links":{"self":"x"},"meta":{},"included":[{"id":2,"type":"role"}],"data":[{"id":1,"type":"user"}]}`, ShapeMany, 1},
		{" \n{ \"data\" : { \"id\" : 1 , \"type\" : \"user\" } } \n", ShapeOne, 1},
	}
	for _, tt := range tests {
		doc, err := Decode([]byte(tt.body))
		if err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		if doc.DataShape != tt.shape || len(doc.Data) != tt.n {
			t.Errorf("%s: shape %v n %d, want %v %d", tt.body, doc.DataShape, len(doc.Data), tt.shape, tt.n)
		}
	}
}

func TestDecodeDocumentLinks(t *testing.T) {
	t.Parallel()
	doc, err := Decode([]byte(`{"data":[],"links":{"first":"https://h/a?x=1","next":{"href":"https://h/b\u0026c","meta":{}},"prev":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Links.First != "https://h/a?x=1" || doc.Links.Next != "https://h/b&c" || doc.Links.Prev != "" {
		t.Errorf("links = %+v", doc.Links)
	}
}

func TestDecodeDocumentBadIDs(t *testing.T) {
	t.Parallel()
	bad := []string{
		`{"data":{"id":"abc","type":"user"}}`,
		`{"data":{"id":1.5,"type":"user"}}`,
		`{"data":{"id":null,"type":"user"}}`,
		`{"data":{"id":true,"type":"user"}}`,
		`{"data":{"id":"","type":"user"}}`,
		`{"data":{"id":"12a","type":"user"}}`,
		`{"data":{"id":99999999999999999999,"type":"user"}}`,
		`{"data":[{"id":1,"type":"user","relationships":{"role":{"data":{"id":"x1","type":"role"}}}}]}`,
		`{"data":[{"id":1,"type":"user","relationships":{"teams":{"data":[{"id":1,"type":"team"},{"id":{},"type":"team"}]}}}]}`,
		`{"data":[],"included":[{"id":[1],"type":"role"}]}`,
	}
	for _, body := range bad {
		doc, err := Decode([]byte(body))
		if err != nil {
			t.Errorf("%s: error %v; a bad id must not fail the document", body, err)
			continue
		}
		for _, r := range doc.Data {
			if member, badID := r.HasInvalidID(); badID {
				if len(r.Raw) == 0 || !json.Valid(r.Raw) {
					t.Errorf("%s: resource with a bad %s keeps no raw JSON", body, member)
				}
			}
		}
		if len(doc.Data) > 0 {
			if _, badID := doc.Data[0].HasInvalidID(); !badID && len(doc.Included) == 0 {
				t.Errorf("%s: bad id not reported", body)
			}
		}
	}
	doc, err := Decode([]byte(`{"data":[{"id":1,"type":"user"},{"id":"abc","type":"user","attributes":{"x":1}},{"id":3,"type":"user"}]}`))
	if err != nil || len(doc.Data) != 3 || !doc.Data[0].ID.Valid() || doc.Data[1].ID.Valid() || doc.Data[2].ID != 3 {
		t.Fatalf("mixed page: %+v %v", doc, err)
	}
	if string(doc.Data[1].Raw) != `{"id":"abc","type":"user","attributes":{"x":1}}` || doc.Data[0].Raw != nil {
		t.Errorf("raw of the bad resource = %s", doc.Data[1].Raw)
	}
}

func TestDecodeDocumentInvalid(t *testing.T) {
	t.Parallel()
	bad := []string{
		``, `null`, `[]`, `"x"`, `{}`, `{"data":5}`, `{"data":"x"}`, `{"data":[{"id":1,"type":"user"}]`,
		`{"data":[{"id":1,"type":"user"}]}x`, `{"data":[{"id":1}]}`,
		`{"data":[{"id":1,"type":"user","relationships":{"r":{"data":5}}}]}`,
		`{"data":[{"id":1,"type":"user","relationships":{"r":{"data":{"id":1}}}}]}`,
		`{"data":[{"id":1,"type":"user","links":{"self":5}}]}`,
		`{"data":[{"id":1,"type":"user","attributes":[1]}]}x`,
		`{"errors":{"id":"x"}}`,
	}
	for _, body := range bad {
		_, err := Decode([]byte(body))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%q: error %v (%T), want a *DecodeError", body, err, err)
		}
	}
}

func TestDecodeDocumentErrors(t *testing.T) {
	t.Parallel()
	body := `{"errors":[
		{"id":"validationError","title":"Validation Error","detail":"Email is invalid","source":{"pointer":"/data/attributes/email"},"status":"422"},
		{"id":"unsupportedMediaType","title":"Unsupported Media Type","details":"Expected Content-Type header to be 'application/vnd.api+json'."},
		{"id":"badParam","status":400,"source":{"parameter":"filter[foo]"}}]}`
	doc, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []ErrorObject{
		{ID: "validationError", Status: "422", Title: "Validation Error", Detail: "Email is invalid",
			Source: ErrorSource{Pointer: "/data/attributes/email"}},
		{ID: "unsupportedMediaType", Title: "Unsupported Media Type",
			Detail: "Expected Content-Type header to be 'application/vnd.api+json'."},
		{ID: "badParam", Status: "400", Source: ErrorSource{Parameter: "filter[foo]"}},
	}
	if !reflect.DeepEqual(doc.Errors, want) {
		t.Errorf("errors =\n%+v\nwant\n%+v", doc.Errors, want)
	}
}

// TestDecodeUsersFixture checks the benchmark page decodes to what was generated.
func TestDecodeUsersFixture(t *testing.T) {
	t.Parallel()
	doc, err := Decode(usersPage(100, 50, "https://h", "https://h/next"))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Data) != 50 || doc.Data[49].ID != 149 || doc.Links.Next != "https://h/next" {
		t.Fatalf("got %d users, last id %d, next %q", len(doc.Data), doc.Data[len(doc.Data)-1].ID, doc.Links.Next)
	}
	r := doc.Data[0]
	if len(r.Relationships) != 9 || len(r.Relationships["contentCategories"].Data.IDs) != 3 ||
		r.Relationships["recipients"].Data.Shape != ShapeAbsent {
		t.Errorf("relationships = %+v", r.Relationships)
	}
}

// FuzzDecodeDocument feeds arbitrary bytes to the decoder: it must never
// panic, and every error must be a *DecodeError.
func FuzzDecodeDocument(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "documents", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(usersPage(1, 1, "https://h", "https://h/n"))
	f.Add([]byte(`{"data":{"id":"1","type":"user","relationships":{"a":{"data":null},"b":{"data":[]}}}}`))
	f.Add([]byte(`{"errors":[{"id":"x","details":"y"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := Decode(body)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is a %T, not a *DecodeError", err, err)
			}
			return
		}
		if doc.DataShape == ShapeOne && len(doc.Data) != 1 {
			t.Fatalf("shape one with %d resources", len(doc.Data))
		}
	})
}
