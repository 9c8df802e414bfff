package apisim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/usersync/usersync/schema"
)

// TestUsersAreRealistic checks the generated users against the catalog:
// types, enums, maximum lengths (some reached exactly), nulls, unicode,
// timestamps and relationships.
func TestUsersAreRealistic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 2000})
	users := e.sim.Users()
	if len(users) != 2000 {
		t.Fatalf("%d users, want 2000", len(users))
	}
	nulls := map[string]int{}
	atMax := map[string]int{}
	var newest time.Time
	unicode := 0
	for _, u := range users {
		for _, a := range schema.User().Attributes {
			v, ok := u.Attributes[a.Name]
			if !ok {
				t.Fatalf("user %d lacks %s", u.ID, a.Name)
			}
			if v == nil {
				nulls[a.Name]++
				continue
			}
			checkType(t, u.ID, a, v)
			if s, ok := v.(string); ok {
				n := utf8.RuneCountInString(s)
				if a.MaxLength > 0 && n > a.MaxLength {
					t.Fatalf("user %d %s has %d characters, max %d", u.ID, a.Name, n, a.MaxLength)
				}
				if n == a.MaxLength {
					atMax[a.Name]++
				}
				if len(a.Enum) > 0 && !slices.Contains(a.Enum, s) {
					t.Fatalf("user %d %s = %q, not one of %v", u.ID, a.Name, s, a.Enum)
				}
				if !isASCII(s) {
					unicode++
				}
			}
		}
		created, updated := u.Attributes["createdAt"].(time.Time), u.Attributes["updatedAt"].(time.Time)
		if !created.Before(updated) {
			t.Fatalf("user %d: createdAt %v not before updatedAt %v", u.ID, created, updated)
		}
		if updated.After(newest) {
			newest = updated
		}
		if n := len(u.Relationships["teams"]); n > 4 {
			t.Fatalf("user %d in %d teams", u.ID, n)
		}
		if d, ok := u.Attributes["duties"].(json.RawMessage); ok && !bytes.HasPrefix(d, []byte(`{"duties":[`)) {
			t.Fatalf("user %d duties = %s", u.ID, d)
		}
	}
	for _, name := range []string{"custom1", "custom5", "phoneCountryCode", "inboundVoicemailCustomMessageText"} {
		if atMax[name] == 0 {
			t.Errorf("no user has %s at its maximum length", name)
		}
	}
	for _, a := range schema.User().Attributes {
		switch a.Name {
		case "email", "username", "firstName", "lastName", "name", "createdAt", "updatedAt", "userGuid", "locked":
			if nulls[a.Name] != 0 {
				t.Errorf("%s is null for %d users", a.Name, nulls[a.Name])
			}
		default:
			if nulls[a.Name] == 0 || nulls[a.Name] == len(users) {
				t.Errorf("%s is null for %d of %d users: want a mix", a.Name, nulls[a.Name], len(users))
			}
		}
	}
	if unicode < len(users)/10 {
		t.Errorf("only %d non-ASCII values", unicode)
	}
	if age := testEpoch.Sub(newest); age < time.Minute || age > 10*time.Minute {
		t.Errorf("newest update is %v old, want a few minutes", age)
	}
	if testEpoch.Sub(users[0].Attributes["createdAt"].(time.Time)) > 5*365*24*time.Hour {
		t.Errorf("createdAt too old")
	}
}

func checkType(t *testing.T, id int64, a schema.Attribute, v any) {
	t.Helper()
	var ok bool
	switch a.Type {
	case schema.Integer:
		_, ok = v.(int64)
	case schema.Boolean:
		_, ok = v.(bool)
	case schema.String:
		_, ok = v.(string)
	case schema.DateTime:
		var ts time.Time
		ts, ok = v.(time.Time)
		ok = ok && ts.Equal(ts.Truncate(time.Millisecond))
	case schema.Object:
		_, ok = v.(json.RawMessage)
	}
	if !ok {
		t.Fatalf("user %d %s = %#v, not a %s", id, a.Name, v, a.Type)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func TestSmallResourcesAreRealistic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 500})
	if n := len(e.sim.Resources("team")); n != 20 {
		t.Errorf("%d teams for 500 users, want 20", n)
	}
	roles := e.sim.Resources("role")
	parents := 0
	for _, r := range roles {
		if len(r.Relationships["parentRole"]) == 1 {
			parents++
			if p := r.Relationships["parentRole"][0]; p >= r.ID {
				t.Errorf("role %d has parent %d", r.ID, p)
			}
		}
	}
	if parents == 0 || parents == len(roles) {
		t.Errorf("%d of %d roles have a parent: want a hierarchy with roots", parents, len(roles))
	}
	admin, _ := e.sim.Resource("profile", 1)
	if admin.Attributes["specialId"] != "admin" || admin.Attributes["isAdmin"] != true {
		t.Errorf("profile 1 = %v, want the admin profile", admin.Attributes)
	}
	def, _ := e.sim.Resource("profile", 2)
	if def.Attributes["specialId"] != "default" || def.Attributes["isAdmin"] != false {
		t.Errorf("profile 2 = %v, want the default profile", def.Attributes)
	}
}

// TestGroundTruthMatchesResponses walks every collection and compares each
// resource attribute by attribute with the ground-truth accessors.
func TestGroundTruthMatchesResponses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 300})
	truths := map[string][]Resource{
		"users": e.sim.Users(), "teams": e.sim.Resources("team"), "roles": e.sim.Resources("role"), "profiles": e.sim.Resources("profile"),
	}
	for path, truth := range truths {
		got, _ := e.walk("/api/v2/"+path+"?page[size]=100", nil)
		if len(got) != len(truth) {
			t.Fatalf("%s: %d served, %d in truth", path, len(got), len(truth))
		}
		for i, r := range got {
			want := truth[i]
			if r.id(t) != want.ID || r.Type != want.Type {
				t.Fatalf("%s[%d] = %s %s, want %s %d", path, i, r.Type, r.ID, want.Type, want.ID)
			}
			var served map[string]json.RawMessage
			var canonical struct {
				Attributes map[string]json.RawMessage `json:"attributes"`
			}
			mustUnmarshal(t, want.Raw, &canonical)
			served = r.Attributes
			if !reflect.DeepEqual(served, canonical.Attributes) {
				t.Fatalf("%s %d: served attributes differ from the truth's raw form", path, want.ID)
			}
			for name, v := range served {
				if got := decodeValue(v, e.sim.isDateTime(kindOfType(want.Type), name)); !reflect.DeepEqual(got, want.Attributes[name]) {
					t.Fatalf("%s %d %s: served %v, truth %v", path, want.ID, name, got, want.Attributes[name])
				}
			}
			for name, wantIDs := range want.Relationships {
				if got := r.relIDs(t, name); !slices.Equal(got, wantIDs) {
					t.Fatalf("%s %d %s: served %v, truth %v", path, want.ID, name, got, wantIDs)
				}
			}
		}
	}
	// Memberships agree with the users' teams.
	var fromUsers []Membership
	for _, u := range truths["users"] {
		for _, team := range u.Relationships["teams"] {
			fromUsers = append(fromUsers, Membership{u.ID, team})
		}
	}
	if !slices.Equal(fromUsers, e.sim.Memberships()) {
		t.Error("Memberships disagree with the users' teams")
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	paths := []string{
		"/api/v2/users?page[size]=200&include=role,profile,teams&provideDataConnections=true",
		"/api/v2/users?sort=-updatedAt&page[size]=50&count=true",
		"/api/v2/teams", "/api/v2/roles", "/api/v2/profiles", "/api/v2/users/17",
	}
	fetch := func(seed int64) [][]byte {
		e := newEnv(t, Options{Seed: seed, Users: 400})
		var out [][]byte
		for _, p := range paths {
			body := e.get(p).body
			// Links carry the test server's random port.
			out = append(out, bytes.ReplaceAll(body, []byte(e.srv.URL), []byte("BASE")))
		}
		return out
	}
	a, b, c := fetch(7), fetch(7), fetch(8)
	for i := range paths {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("%s: same seed, different bytes", paths[i])
		}
		if bytes.Equal(a[i], c[i]) {
			t.Errorf("%s: different seeds, same bytes", paths[i])
		}
	}
}

func TestSingleResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 50})
	d := e.getDoc("/api/v2/users/7", http.StatusOK)
	var u resource
	mustUnmarshal(t, d.Data, &u)
	want, _ := e.sim.User(7)
	if u.id(t) != 7 || attrString(t, u, "email") != want.Attributes["email"] {
		t.Errorf("GET /users/7 = %s %s", u.ID, u.Attributes["email"])
	}
	if self := u.Links["self"]; self != e.srv.URL+"/api/v2/users/7" {
		t.Errorf("links.self = %q", self)
	}
	for _, path := range []string{"/api/v2/users/51", "/api/v2/users/abc", "/api/v2/teams/999", "/api/v2/nothing", "/api/v1/users"} {
		d := e.getDoc(path, http.StatusNotFound)
		if len(d.Errors) != 1 || d.Errors[0].ID != "resourceNotFound" || d.Errors[0].Detail == "" {
			t.Errorf("GET %s: errors = %+v", path, d.Errors)
		}
	}
	r := e.do(http.MethodPost, "/api/v2/users", http.Header{"Content-Type": {"application/json"}})
	if r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST without a body: %d", r.status)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/vnd.api+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if !strings.Contains(string(e.getDoc("/api/v2/users/1", 200).Data), `"type":"user"`) {
		t.Error("no type in single resource")
	}
	// A body of the wrong media type gets 415, whose error says "details".
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v2/users", strings.NewReader(`{"data":{}}`))
	req.Header.Set("Authorization", "Bearer x")
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d415 doc
	if err := json.NewDecoder(resp.Body).Decode(&d415); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType ||
		d415.Errors[0].ID != "unsupportedMediaType" || d415.Errors[0].Details == "" || d415.Errors[0].Detail != "" {
		t.Errorf("415: %d %+v %v", resp.StatusCode, d415.Errors, err)
	}
}
