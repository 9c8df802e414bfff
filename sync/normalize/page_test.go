package normalize

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/internal/jsonscan"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsondoc"
)

// decodePage types data, one "data" array, with DecodeData.
func (n *Normalizer) decodePage(data []byte) (*Page, error) {
	page, end, err := n.decodeArray(data)
	if err == nil && jsonscan.WS(data, end) != len(data) {
		return nil, &jsondoc.DecodeError{Reason: "data is followed by more"}
	}
	return page, err
}

// decodePageSlow decodes and types data the general way: what DecodeData
// must give.
func (n *Normalizer) decodePageSlow(data []byte) (*Page, error) {
	if nesting(data) > MaxNesting+1 && gjson.ValidBytes(data) && gjson.ParseBytes(data).IsArray() {
		// A resource nested deeper than MaxNesting is rejected whole, and
		// the rest of the page decoded.
		page := &Page{}
		var err error
		gjson.ParseBytes(data).ForEach(func(_, el gjson.Result) bool {
			page.General++
			if nesting([]byte(el.Raw)) > MaxNesting {
				page.Rejected = append(page.Rejected, tooDeep([]byte(el.Raw)))
				return true
			}
			var doc *jsondoc.Document
			if doc, err = jsondoc.Decode(wrapData([]byte("[" + el.Raw + "]"))); err != nil {
				return false
			}
			for _, r := range doc.Data {
				n.add(page, r)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		return page, nil
	}
	doc, err := jsondoc.Decode(wrapData(data))
	if err != nil {
		return nil, err
	}
	page := &Page{General: len(doc.Data)}
	for _, r := range doc.Data {
		n.add(page, r)
	}
	return page, nil
}

// nesting returns the greatest depth of brackets in b, outside strings.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// samePage checks that DecodePage gives exactly what the general path
// (jsondoc.Decode, then Row per resource) gives for data.
func samePage(t testing.TB, n *Normalizer, data []byte) *Page {
	t.Helper()
	if i := jsonscan.WS(data, 0); i == len(data) || data[i] != '[' {
		// The client calls a DataDecoder only for a "data" array.
		if _, err := n.decodePage(data); err == nil {
			t.Fatalf("no error for data that is not an array: %s", data)
		}
		return nil
	}
	if _, end, err := n.decodeArray(data); err == nil && jsonscan.WS(data, end) != len(data) {
		// More after the array: the rest of a document, which the client
		// decodes (see the jsonapi tests).
		return nil
	}
	want, wantErr := n.decodePageSlow(data)
	got, gotErr := n.decodePage(data)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("general path error %v, single pass error %v\ndata: %s", wantErr, gotErr, data)
	}
	if wantErr != nil {
		return nil
	}
	if len(got.Rows) != len(want.Rows) || len(got.Rejected) != len(want.Rejected) {
		t.Fatalf("general path %d rows %d rejected, single pass %d rows %d rejected\ndata: %s",
			len(want.Rows), len(want.Rejected), len(got.Rows), len(got.Rejected), data)
	}
	for i := range want.Rows {
		if !reflect.DeepEqual(got.Rows[i], want.Rows[i]) {
			t.Fatalf("row %d differs:\ngeneral     %+v\nsingle pass %+v\ndata: %s", i, want.Rows[i], got.Rows[i], data)
		}
		if string(got.Rows[i].Hash()) != string(want.Rows[i].Hash()) {
			t.Fatalf("row %d: hashes differ", i)
		}
	}
	for i := range want.Rejected {
		w, g := want.Rejected[i], got.Rejected[i]
		if w.Err.Error() != g.Err.Error() || !reflect.DeepEqual(w.Resource, g.Resource) {
			t.Fatalf("rejected %d differs:\ngeneral     %v %+v\nsingle pass %v %+v", i, w.Err, w.Resource, g.Err, g.Resource)
		}
	}
	return got
}

// simPages fetches every users page of a simulator over HTTP with the
// client, as a sync asks for them, and returns their "data" arrays.
func simPages(t testing.TB, users int, knobs apisim.Knobs) [][]byte {
	t.Helper()
	sim := apisim.New(apisim.Options{Seed: 7, Users: users, Knobs: knobs})
	sim.UpdateUsers(users / 3)
	srv := httptest.NewServer(sim)
	defer srv.Close()
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("test")})
	if err != nil {
		t.Fatal(err)
	}
	q := jsonapi.Query{}.PageSize(500).ProvideDataConnections().ProvideAuthorizationMeta()
	pages := jsonapi.DecodeData(client.Collection("users", q), func(b []byte) ([]byte, int, error) {
		_, end, err := New(schema.User()).DecodeData(b)
		return append([]byte(nil), b[:end]...), end, err
	})
	var out [][]byte
	for {
		p, err := pages.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return out
		}
		if len(p.Data) != 0 {
			t.Fatalf("page %d: Data holds %d resources next to a DataDecoder", p.Number, len(p.Data))
		}
		out = append(out, p.Decoded)
	}
}

// TestDecodePageSimulator holds DecodePage to the general path on every page
// of a simulator, and checks that the single pass types all of them: were
// it to leave them to the general path, a backfill would be slow again.
func TestDecodePageSimulator(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	for _, knobs := range []apisim.Knobs{{}, {StringIDs: true}} {
		total, general := 0, 0
		for _, data := range simPages(t, 2000, knobs) {
			p := samePage(t, n, data)
			total += len(p.Rows) + len(p.Rejected)
			general += p.General
		}
		if total != 2000 {
			t.Fatalf("%+v: %d users decoded, want 2000", knobs, total)
		}
		if !knobs.StringIDs && general != 0 {
			t.Fatalf("%d of %d users took the general path", general, total)
		}
	}
}

// edgeResources are resource objects in forms the single pass refuses or
// must get exactly right. Each is checked within a page, beside a
// simulator user.
var edgeResources = []string{
	`{"type":"user","id":5,"attributes":{"firstName":"A"}}`,
	`{"type":"user","id":"5","attributes":{"firstName":"A"}}`,
	`{"type":"user","id":"x5","attributes":{"firstName":"A"}}`,
	`{"type":"user","id":5.0,"attributes":{}}`,
	`{"type":"user","id":1e2,"attributes":{}}`,
	`{"type":"user","id":-9223372036854775808,"attributes":{}}`,
	`{"type":"user","id":9223372036854775808,"attributes":{}}`,
	`{"type":"team","id":5,"attributes":{}}`,
	`{"id":5,"attributes":{}}`,
	`{"type":"","id":5,"attributes":{}}`,
	`{"Type":"user","id":5,"attributes":{}}`,
	`{"type":"user","ID":5,"attributes":{}}`,
	`{"type":"user","id":5,"Attributes":{"firstName":"A"}}`,
	`{"type":"user","id":5}`,
	`{"type":"user","id":5,"attributes":null}`,
	`{"type":"user","id":5,"attributes":[]}`,
	`{"type":"user","id":5,"attributes":{"firstName":"A","firstName":"B"}}`,
	`{"type":"user","id":5,"id":6,"attributes":{}}`,
	`{"type":"user","id":5,"attributes":{"locked":"yes"}}`,
	`{"type":"user","id":5,"attributes":{"locked":1}}`,
	`{"type":"user","id":5,"attributes":{"accountsViewId":1.5}}`,
	`{"type":"user","id":5,"attributes":{"accountsViewId":-0}}`,
	`{"type":"user","id":5,"attributes":{"accountsViewId":99999999999999999999}}`,
	`{"type":"user","id":5,"attributes":{"accountsViewId":"12"}}`,
	`{"type":"user","id":5,"attributes":{"updatedAt":"yesterday"}}`,
	`{"type":"user","id":5,"attributes":{"updatedAt":"2024-01-02T03:04:05.123456789+02:00"}}`,
	`{"type":"user","id":5,"attributes":{"updatedAt":"2024-01-02T03:04:05\u002e5Z"}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"Zo\u00eb \"Z\" \ud834\udd1e \ud800"}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"a\u0000b"}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"\/\b\f\n\r\t\u00E9\u00e9\u20AC\uFFFF\udbff\udfff <\u003cb\u003e> a long plain run of ASCII text"}}`,
	`{"type":"user","id":5,"attributes":{"newThing":"a\u0000b"}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"Zoë 李"}}`,
	`{"type":"user","id":5,"attributes":{"first\u004eame":"A"}}`,
	`{"type":"user","id":5,"attributes":{"newThing":{"a":[1,2,{"b":null}]},"other":[true],"third":1.5e3}}`,
	`{"type":"user","id":5,"attributes":{"duties":{"a":1}}}`,
	`{"type":"user","id":5,"attributes":{"duties":["a"]}}`,
	`{"type":"user","id":5,"attributes":{"duties":"a"}}`,
	`{"type":"user","id":5,"attributes":{ "firstName" : "A" , "locked" : true }, "extra": {"x": [1]}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":null},"profile":{"data":{"type":"profile","id":3}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":[{"type":"role","id":3}]}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"links":{"related":"x"}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":{"type":"role","id":"3"}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":{"type":"role","id":"x"}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":{"id":3}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":{"type":"role"}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":{"type":"role","id":3,"meta":{"x":1}}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"data":{"Type":"role","id":3}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":{"Data":{"type":"role","id":3}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"role":null}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"teams":{"data":[]},"mailboxes":{"data":[{"type":"mailbox","id":2},{"type":"mailbox","id":2},{"type":"other","id":2}]},"zeta":{"data":[{"type":"z","id":1}]},"alpha":{"data":null}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"teams":{"data":{"type":"team","id":1}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"teams":{"data":[{"type":"team","id":1}]},"teams":{"data":[]}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"teams":{"data":[],"links":{"self":null,"related":{"href":"x"}}}}}`,
	`{"type":"user","id":5,"attributes":{},"relationships":{"teams":{"data":[],"links":{"self":5}}}}`,
	`{"type":"user","id":5,"attributes":{},"links":{"self":"http://x/users/5"}}`,
	`{"type":"user","id":5,"attributes":{},"links":{"self":{"href":"http://x"}}}`,
	`{"type":"user","id":5,"attributes":{},"links":{"self":true}}`,
	`{"type":"user","id":5,"attributes":{},"links":"x"}`,
	`{"type":"user","id":5,"attributes":{},"meta":{"canWrite":false,"dataConnections":null}}`,
	`{"type":"user","id":5,"attributes":{},"meta":{"canWrite":"no"}}`,
	`{"type":"user","id":5,"attributes":{},"meta":{"canWrite":null,"dataConnections":[{"b":1,"a":2}]}}`,
	`{"type":"user","id":5,"attributes":{},"meta":{"dataConnections":[],"dataConnections":[1]}}`,
	`{"type":"user","id":5,"attributes":{},"meta":null}`,
	`{"type":"user","id":5,"attributes":{},"meta":[]}`,
	`{"type":"user","id":5,"attributes":{"firstName":tru}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"A",}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"A"} "x":1}`,
	`{"type":"user","id":5,"attributes":{"firstName":"A	B"}}`,
	`{"type":"user","id":5,"attributes":{"firstName":"\x"}}`,
	`{"type":"user","id":5,"attributes":{"newThing":01}}`,
	`{"type":"user","id":5,"attributes":{"newThing":-}}`,
	`{"type":"user","id":5,"attributes":{"newThing":[1,]}}`,
	`null`,
	`5`,
	`[]`,
	`{}`,
}

// poisonResources are valid JSON resource objects holding what PostgreSQL
// cannot store, each with the field its rejection names ("" when it is
// storable after all).
func poisonResources() []struct{ resource, field string } {
	deep := func(n int) string { return strings.Repeat(`{"a":[`, n/2) + "1" + strings.Repeat("]}", n/2) }
	return []struct{ resource, field string }{
		{`{"type":"user","id":"12\u00003","attributes":{}}`, "id"},
		{`{"type":"user","id":` + strings.Repeat("9", 5000) + `,"attributes":{}}`, "id"},
		{`{"type":"user","id":"` + strings.Repeat("9", 5000) + `","attributes":{}}`, "id"},
		{`{"type":"user","id":92233720368547758070,"attributes":{}}`, "id"},
		{"{\"type\":\"user\",\"id\":\"1\xff\",\"attributes\":{}}", "id"},
		{`{"type":"user","id":5,"attributes":{"firstName":"a\u0000b"}}`, "firstName"},
		{"{\"type\":\"user\",\"id\":5,\"attributes\":{\"firstName\":\"a\xffb\"}}", "firstName"},
		{"{\"type\":\"user\",\"id\":5,\"attributes\":{\"firstName\":\"\xed\xa0\x80\"}}", "firstName"},
		{`{"type":"user","id":5,"attributes":{"firstName":"\ud800"}}`, ""},
		{"{\"type\":\"user\",\"id\":5,\"attributes\":{\"newThing\":[\"\xc3\"]}}", "newThing"},
		{`{"type":"user","id":5,"attributes":{"newThing":{"x":"\ud800 "}}}`, "newThing"},
		{`{"type":"user","id":5,"attributes":{"newThing":"\ud800\udc00"}}`, ""},
		{`{"type":"user","id":5,"attributes":{"duties":{"a":"\u0000"}}}`, "duties"},
		{`{"type":"user","id":5,"attributes":{"new\u0000":1}}`, "attributes"},
		{`{"type":"user","id":5,"attributes":{},"relationships":{"a\u0000b":{"data":[{"type":"x","id":1}]}}}`, "relationships"},
		{`{"type":"user","id":5,"attributes":{},"relationships":{"mailboxes":{"data":[{"type":"mail\u0000box","id":1}]}}}`, "relationships.mailboxes"},
		{`{"type":"user","id":5,"attributes":{},"relationships":{"mailboxes":{"data":[{"type":"mailbox","id":"1\u00002"}]}}}`, "relationships.mailboxes"},
		{"{\"type\":\"user\",\"id\":5,\"attributes\":{},\"relationships\":{\"a\xffb\":{\"data\":[{\"type\":\"x\xff\",\"id\":1}]}}}", "relationships.a\uFFFDb"},
		{`{"type":"user","id":5,"attributes":{},"relationships":{"mailboxes":{"data":[],"meta":{"x":"\u0000"}}}}`, ""},
		{`{"type":"user","id":5,"attributes":{},"links":{"self":"\u0000"},"extra":"\ud800"}`, ""},
		{`{"type":"user","id":5,"attributes":{},"meta":{"dataConnections":[{"a":"\u0000"}]}}`, "meta.dataConnections"},
		{`{"type":"user","id":5,"attributes":{},"meta":{"dataConnections":["\udfff"]}}`, "meta.dataConnections"},
		{`{"type":"user","id":5,"attributes":{},"meta":{"other":"\u0000"}}`, ""},
		{`{"type":"user","id":5,"attributes":{"newThing":` + deep(MaxNesting-2) + `}}`, ""},
		{`{"type":"user","id":5,"attributes":{"newThing":` + deep(MaxNesting) + `}}`, "newThing"},
		{`{"type":"user","id":5,"attributes":{"duties":` + deep(10_000) + `}}`, "duties"},
		{`{"type":"user","id":5,"attributes":{},"meta":{"dataConnections":` + deep(10_000) + `}}`, "meta"},
		{`{"type":"user","id":5,"attributes":{},"relationships":{"zeta":{"data":null,"meta":` + deep(10_000) + `}}}`, "relationships"},
		{`{"type":"user","id":5,"attributes":{"newThing":` + deep(1_000_000) + `}}`, "newThing"},
	}
}

// TestDecodePagePoison: a resource holding what PostgreSQL cannot store,
// or nested too deep, is rejected whole, naming the field; the rest of the
// page is typed.
func TestDecodePagePoison(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	sim := simPages(t, 3, apisim.Knobs{})
	users := strings.TrimSuffix(strings.TrimPrefix(string(sim[0]), "["), "]")
	for i, p := range poisonResources() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			data := []byte("[" + users + "," + p.resource + "," + users + "]")
			page, err := n.decodePage(data)
			if err != nil {
				t.Fatalf("page refused: %v", err)
			}
			rows := 6
			if p.field == "" {
				rows++
			}
			if len(page.Rows) != rows {
				t.Errorf("%d rows, want %d", len(page.Rows), rows)
			}
			switch {
			case p.field == "" && len(page.Rejected) != 0:
				t.Errorf("rejected %v, want none", page.Rejected[0].Err)
			case p.field != "":
				var fe *FieldError
				if len(page.Rejected) != 1 || !errors.As(page.Rejected[0].Err, &fe) || fe.Field != p.field {
					t.Fatalf("rejected %+v, want one naming %s", page.Rejected, p.field)
				}
			}
			if len(data) < 100_000 {
				samePage(t, n, data)
			}
		})
	}
}

func TestDecodePageEdgeCases(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	sim := simPages(t, 3, apisim.Knobs{})
	user := strings.TrimSuffix(strings.TrimPrefix(string(sim[0]), "["), "]")
	user = user[:strings.Index(user, `},{"type"`)+1]
	for i, r := range edgeResources {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			samePage(t, n, []byte("["+user+","+r+"]"))
			samePage(t, n, []byte(" [ "+r+" ] "))
		})
	}
	for _, data := range []string{``, `[`, `]`, `[,]`, `[{}`, `{}`, `null`, `[] x`, `[{"type":"user","id":1,"attributes":{}}]]`} {
		samePage(t, n, []byte(data))
	}
}

// FuzzDecodePage holds the single pass to the general path on any input.
func FuzzDecodePage(f *testing.F) {
	sim := simPages(f, 3, apisim.Knobs{})
	f.Add(sim[0])
	for _, r := range edgeResources {
		f.Add([]byte("[" + r + "]"))
	}
	for _, p := range poisonResources() {
		if len(p.resource) < 100_000 {
			f.Add([]byte("[" + p.resource + "]"))
		}
	}
	n, np := New(schema.User()), New(schema.User())
	np.SetPolicy(testPolicy(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		samePage(t, n, data)
		samePage(t, np, data) // the policy applies the same on both paths
	})
}
