package apisim

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func updatedAt(r Resource) time.Time { return r.Attributes["updatedAt"].(time.Time) }
func createdAt(r Resource) time.Time { return r.Attributes["createdAt"].(time.Time) }

func TestFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 600, IdenticalTimestamps: 40})
	users := e.sim.Users()
	byUpdated := slices.Clone(users)
	slices.SortFunc(byUpdated, func(a, b Resource) int { return updatedAt(a).Compare(updatedAt(b)) })
	t1, t2 := updatedAt(byUpdated[150]), updatedAt(byUpdated[420])
	c1 := createdAt(users[77])
	pick := users[123]
	email := pick.Attributes["email"].(string)
	has := func(list []int64, id int64) bool { return slices.Contains(list, id) }
	var parent int64
	for _, r := range e.sim.Resources("role") {
		if p := r.Relationships["parentRole"]; len(p) == 1 {
			parent = p[0]
		}
	}
	in := func(v time.Time, lo, hi time.Time) bool { return !v.Before(lo) && !v.After(hi) }

	cases := []struct {
		name string
		path string
		kv   []string
		want func(Resource) bool
	}{
		{"id", "users", []string{"filter[id]", "5"}, func(r Resource) bool { return r.ID == 5 }},
		{"id list", "users", []string{"filter[id]", "3,1,2,500,9999,2"}, func(r Resource) bool { return has([]int64{1, 2, 3, 500}, r.ID) }},
		{"id range", "users", []string{"filter[id]", "10..20"}, func(r Resource) bool { return r.ID >= 10 && r.ID <= 20 }},
		{"updatedAt from, inclusive", "users", []string{"filter[updatedAt]", ms(t1) + "..inf"}, func(r Resource) bool { return !updatedAt(r).Before(t1) }},
		{"updatedAt to, inclusive", "users", []string{"filter[updatedAt]", "inf.." + ms(t1)}, func(r Resource) bool { return !updatedAt(r).After(t1) }},
		{"updatedAt closed range", "users", []string{"filter[updatedAt]", ms(t1) + ".." + ms(t2)}, func(r Resource) bool { return in(updatedAt(r), t1, t2) }},
		{"updatedAt neginf", "users", []string{"filter[updatedAt]", "neginf.." + ms(t2)}, func(r Resource) bool { return !updatedAt(r).After(t2) }},
		{"updatedAt exact", "users", []string{"filter[updatedAt]", ms(t1)}, func(r Resource) bool { return updatedAt(r).Equal(t1) }},
		{"createdAt range", "users", []string{"filter[createdAt]", ms(c1) + "..inf"}, func(r Resource) bool { return !createdAt(r).Before(c1) }},
		{"new syntax gte lte", "users", []string{"newFilterSyntax", "true", "filter[updatedAt][gte]", ms(t1), "filter[updatedAt][lte]", ms(t2)},
			func(r Resource) bool { return in(updatedAt(r), t1, t2) }},
		{"new syntax gt lt", "users", []string{"newFilterSyntax", "true", "filter[updatedAt][gt]", ms(t1), "filter[updatedAt][lt]", ms(t2)},
			func(r Resource) bool { return updatedAt(r).After(t1) && updatedAt(r).Before(t2) }},
		{"email", "users", []string{"filter[email]", email}, func(r Resource) bool { return r.ID == pick.ID }},
		{"username", "users", []string{"filter[username]", pick.Attributes["username"].(string)}, func(r Resource) bool { return r.ID == pick.ID }},
		{"firstName list with unicode", "users", []string{"filter[firstName]", "José,Zoë,李"},
			func(r Resource) bool { return has3(r.Attributes["firstName"], "José", "Zoë", "李") }},
		{"lastName", "users", []string{"filter[lastName]", "O'Brien"}, func(r Resource) bool { return r.Attributes["lastName"] == "O'Brien" }},
		{"locked", "users", []string{"filter[locked]", "true"}, func(r Resource) bool { return r.Attributes["locked"] == true }},
		{"role ids", "users", []string{"filter[role][id]", "2,3"}, func(r Resource) bool { return anyOf(r.Relationships["role"], 2, 3) }},
		{"profile id", "users", []string{"filter[profile][id]", "1"}, func(r Resource) bool { return anyOf(r.Relationships["profile"], 1) }},
		{"teams id", "users", []string{"filter[teams][id]", "4"}, func(r Resource) bool { return anyOf(r.Relationships["teams"], 4) }},
		{"combined", "users", []string{"filter[locked]", "false", "filter[profile][id]", "2", "filter[updatedAt]", ms(t1) + "..inf"},
			func(r Resource) bool {
				return r.Attributes["locked"] == false && anyOf(r.Relationships["profile"], 2) && !updatedAt(r).Before(t1)
			}},
		{"team name", "teams", []string{"filter[name]", "Équipe Nord"}, func(r Resource) bool { return r.Attributes["name"] == "Équipe Nord" }},
		{"teams by member", "teams", []string{"filter[users][id]", "5,6"},
			func(r Resource) bool { return anyOf(userTeams(e.sim, 5, 6), r.ID) }},
		{"roles by parent", "roles", []string{"filter[parentRole][id]", itoa(parent)}, func(r Resource) bool { return anyOf(r.Relationships["parentRole"], parent) }},
		{"profiles specialId", "profiles", []string{"filter[specialId]", "admin"}, func(r Resource) bool { return r.ID == 1 }},
	}
	truth := map[string][]Resource{"users": users, "teams": e.sim.Resources("team"), "roles": e.sim.Resources("role"), "profiles": e.sim.Resources("profile")}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, _ := e.walk(q("/api/v2/"+c.path, append(c.kv, "page[size]", "97")...), nil)
			var want []int64
			for _, r := range truth[c.path] {
				if c.want(r) {
					want = append(want, r.ID)
				}
			}
			if len(want) == 0 {
				t.Fatal("the case selects nothing: it tests nothing")
			}
			if g := sortedIDs(t, got); !slices.Equal(g, want) {
				t.Errorf("got %d ids %v, want %d %v", len(g), head(g), len(want), head(want))
			}
		})
	}
}

func has3(v any, s ...string) bool { str, _ := v.(string); return slices.Contains(s, str) }

func anyOf(list []int64, want ...int64) bool {
	return slices.ContainsFunc(list, func(x int64) bool { return slices.Contains(want, x) })
}

func userTeams(s *Server, ids ...int64) []int64 {
	var out []int64
	for _, id := range ids {
		u, _ := s.User(id)
		out = append(out, u.Relationships["teams"]...)
	}
	return out
}

func head(ids []int64) []int64 { return ids[:min(len(ids), 12)] }

func TestBadParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 20})
	cases := []struct {
		path, param, id, detail string
	}{
		{q("/api/v2/users", "filter[title]", "x"), "filter[title]", "filterParameter.invalid", "cannot be used as a filter"},
		{q("/api/v2/users", "filter[nope]", "x"), "filter[nope]", "filterParameter.invalid", "no attribute"},
		{q("/api/v2/users", "filter[role][name]", "x"), "filter[role][name]", "filterParameter.deprecated", "filter[role][id]=<ids>"},
		{q("/api/v2/users", "filter[creator][id]", "1"), "filter[creator][id]", "filterParameter.invalid", "cannot be used as a filter"},
		{q("/api/v2/users", "filter[updatedAt]", "2024-05-01T00:00:00.000123Z..inf"), "filter[updatedAt]", "filterParameter.invalidDatetimeFormat", "millisecond"},
		{q("/api/v2/users", "filter[updatedAt][gte]", "2024-05-01"), "filter[updatedAt][gte]", "filterParameter.invalid", "newFilterSyntax=true"},
		{q("/api/v2/users", "newFilterSyntax", "true", "filter[updatedAt]", "2024-05-01..inf"), "filter[updatedAt]", "filterParameter.invalidDatetimeFormat", "[gte]"},
		{q("/api/v2/users", "filter[id]", "abc"), "filter[id]", "filterParameter.invalid", ""},
		{q("/api/v2/users", "filter[locked]", "maybe"), "filter[locked]", "filterParameter.invalid", ""},
		{q("/api/v2/users", "filter[teams][id]", "1,x"), "filter[teams][id]", "filterParameter.invalid", ""},
		{q("/api/v2/users", "sort", "role.name"), "sort", "sortParameter.deprecated", "include=role"},
		{q("/api/v2/users", "sort", "-title"), "sort", "sortParameter.invalid", ""},
		{q("/api/v2/profiles", "sort", "specialId"), "sort", "sortParameter.invalid", ""},
		{q("/api/v2/users", "include", "mailbox"), "include", "includeParameter.invalid", ""},
		{q("/api/v2/users", "fields[user]", "email,nope"), "fields[user]", "fieldsParameter.invalid", "nope"},
		{q("/api/v2/users", "fields[user]", "languagePreference"), "fields[user]", "fieldsParameter.invalid", ""},
		{q("/api/v2/users", "fields[widget]", "a"), "fields[widget]", "fieldsParameter.invalid", ""},
		{q("/api/v2/users", "page[size]", "0"), "page[size]", "pageParameter.invalid", ""},
		{q("/api/v2/users", "page[size]", "ten"), "page[size]", "pageParameter.invalid", ""},
		{q("/api/v2/users", "page[after]", "not-a-cursor"), "page[after]", "pageParameter.invalid", ""},
		{q("/api/v2/users", "page[before]", "x"), "page[before]", "pageParameter.invalid", ""},
		{q("/api/v2/users", "count", "maybe"), "count", "countParameter.invalid", ""},
	}
	for _, c := range cases {
		t.Run(c.param+" "+c.id, func(t *testing.T) {
			d := e.getDoc(c.path, http.StatusBadRequest)
			if len(d.Errors) != 1 {
				t.Fatalf("errors = %+v", d.Errors)
			}
			got := d.Errors[0]
			if got.Source.Parameter != c.param || got.ID != c.id || !strings.Contains(got.Detail, c.detail) || got.Title == "" {
				t.Errorf("error = %+v, want parameter %s, id %s, detail containing %q", got, c.param, c.id, c.detail)
			}
		})
	}
}

func TestSort(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 500, IdenticalTimestamps: 120})
	users := e.sim.Users()
	str := func(name string) func(a, b Resource) int {
		return func(a, b Resource) int {
			return strings.Compare(a.Attributes[name].(string), b.Attributes[name].(string))
		}
	}
	byTime := func(f func(Resource) time.Time) func(a, b Resource) int {
		return func(a, b Resource) int { return f(a).Compare(f(b)) }
	}
	desc := func(f func(a, b Resource) int) func(a, b Resource) int {
		return func(a, b Resource) int { return -f(a, b) }
	}
	cases := []struct {
		sort string
		cmp  func(a, b Resource) int
	}{
		{"updatedAt", byTime(updatedAt)},
		{"-updatedAt", desc(byTime(updatedAt))},
		{"updatedAt,id", byTime(updatedAt)},
		{"createdAt", byTime(createdAt)},
		{"-id", func(a, b Resource) int { return cmp.Compare(b.ID, a.ID) }},
		{"email", str("email")},
		{"-lastName", desc(str("lastName"))},
		{"lastName,-firstName", func(a, b Resource) int {
			return cmp.Or(str("lastName")(a, b), -str("firstName")(a, b))
		}},
		{"-locked", func(a, b Resource) int {
			return -cmp.Compare(boolInt(a.Attributes["locked"].(bool)), boolInt(b.Attributes["locked"].(bool)))
		}},
	}
	for _, c := range cases {
		t.Run(c.sort, func(t *testing.T) {
			t.Parallel()
			want := slices.Clone(users)
			slices.SortStableFunc(want, func(a, b Resource) int { return cmp.Or(c.cmp(a, b), cmp.Compare(a.ID, b.ID)) })
			got, pages := e.walk(q("/api/v2/users", "sort", c.sort, "page[size]", "45"), nil)
			if pages < 10 {
				t.Fatalf("%d pages", pages)
			}
			if g, w := ids(t, got), truthIDs(want); !slices.Equal(g, w) {
				t.Errorf("order differs: got %v..., want %v...", head(g), head(w))
			}
		})
	}
	t.Run("teams by -name", func(t *testing.T) {
		want := e.sim.Resources("team")
		slices.SortStableFunc(want, func(a, b Resource) int {
			return -strings.Compare(a.Attributes["name"].(string), b.Attributes["name"].(string))
		})
		got, _ := e.walk(q("/api/v2/teams", "sort", "-name", "page[size]", "3"), nil)
		if !slices.Equal(ids(t, got), truthIDs(want)) {
			t.Errorf("got %v, want %v", ids(t, got), truthIDs(want))
		}
	})
}

// TestIdenticalTimestamps checks a run of hundreds of users sharing one
// updatedAt, spanning several pages, comes out whole and in id order.
func TestIdenticalTimestamps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 1000, IdenticalTimestamps: 300})
	counts := map[time.Time][]int64{}
	for _, u := range e.sim.Users() {
		counts[updatedAt(u)] = append(counts[updatedAt(u)], u.ID)
	}
	var shared time.Time
	for ts, list := range counts {
		if len(list) == 300 {
			shared = ts
		}
	}
	if shared.IsZero() {
		t.Fatal("no timestamp shared by 300 users")
	}
	got, pages := e.walk(q("/api/v2/users", "sort", "updatedAt", "filter[updatedAt]", ms(shared)+".."+ms(shared), "page[size]", "50"), nil)
	if pages != 6 || !slices.Equal(ids(t, got), counts[shared]) {
		t.Errorf("%d pages, %d users; want 6 pages with the 300 tied users in id order", pages, len(got))
	}
}

func TestInclude(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 300})
	d := e.getDoc(q("/api/v2/users", "include", "role,profile,teams", "page[size]", "200"), http.StatusOK)
	want := map[string]bool{}
	for _, u := range d.list(t) {
		for rel, typ := range map[string]string{"role": "role", "profile": "profile", "teams": "team"} {
			for _, id := range u.relIDs(t, rel) {
				want[typ+" "+string(json.RawMessage(itoa(id)))] = true
			}
		}
	}
	got := map[string]bool{}
	for _, r := range d.Included {
		k := r.Type + " " + string(r.ID)
		if got[k] {
			t.Fatalf("%s included twice", k)
		}
		got[k] = true
		var truth Resource
		switch r.Type {
		case "role":
			truth, _ = e.sim.Resource("role", r.id(t))
		case "profile":
			truth, _ = e.sim.Resource("profile", r.id(t))
		case "team":
			truth, _ = e.sim.Resource("team", r.id(t))
		}
		if truth.Attributes["name"] != decodeValue(r.Attributes["name"], false) {
			t.Errorf("%s: name %s, truth %v", k, r.Attributes["name"], truth.Attributes["name"])
		}
	}
	if len(got) != len(want) || len(got) < 10 {
		t.Errorf("included %d resources, want the %d referenced", len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Errorf("%s referenced but not included", k)
		}
	}
	roles := e.getDoc(q("/api/v2/roles", "include", "parentRole"), http.StatusOK)
	if len(roles.Included) == 0 || roles.Included[0].Type != "role" {
		t.Errorf("include=parentRole: %+v", roles.Included)
	}
	single := e.getDoc(q("/api/v2/users/3", "include", "teams,creator"), http.StatusOK)
	u3, _ := e.sim.User(3)
	if len(single.Included) != len(u3.Relationships["teams"])+len(u3.Relationships["creator"]) {
		t.Errorf("GET /users/3?include=teams,creator included %d", len(single.Included))
	}
}

func itoa(n int64) string { return string(appendInt(nil, n)) }

func TestSparseFieldsets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 60})
	cases := []struct {
		name        string
		kv          []string
		attrs, rels []string
	}{
		{"empty", []string{"fields[user]", ""}, nil, nil},
		{"one attribute", []string{"fields[user]", "updatedAt"}, []string{"updatedAt"}, nil},
		{"attribute and relationship", []string{"fields[user]", "email,teams"}, []string{"email"}, []string{"teams"}},
		{"other type only", []string{"fields[role]", "name"}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, u := range e.getDoc(q("/api/v2/users", c.kv...), http.StatusOK).list(t) {
				if c.name == "other type only" {
					if len(u.Attributes) < 70 || len(u.Relationships) < 10 {
						t.Fatalf("fields[role] trimmed users: %d attributes", len(u.Attributes))
					}
					continue
				}
				if u.Attributes == nil || !slices.Equal(sortedKeys(u.Attributes), c.attrs) || !slices.Equal(sortedKeys(u.Relationships), c.rels) {
					t.Fatalf("attributes %v, relationships %v; want %v, %v", sortedKeys(u.Attributes), sortedKeys(u.Relationships), c.attrs, c.rels)
				}
			}
		})
	}
	d := e.getDoc(q("/api/v2/users", "include", "role", "fields[role]", "name", "fields[user]", "role"), http.StatusOK)
	for _, r := range d.Included {
		if !slices.Equal(sortedKeys(r.Attributes), []string{"name"}) || len(r.Relationships) != 0 {
			t.Errorf("included role fields: %v %v", sortedKeys(r.Attributes), sortedKeys(r.Relationships))
		}
	}
	if !strings.Contains(string(e.get(q("/api/v2/users/1", "fields[user]", "")).body), `"attributes":{}`) {
		t.Error(`fields[user]= on a single user does not send "attributes":{}`)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 250, Knobs: Knobs{CountDelay: 40 * time.Millisecond}})
	locked := 0
	for _, u := range e.sim.Users() {
		if u.Attributes["locked"] == true {
			locked++
		}
	}
	meta := func(kv ...string) map[string]json.RawMessage {
		return e.getDoc(q("/api/v2/users", kv...), http.StatusOK).Meta
	}
	if m := meta("count", "true"); string(m["count"]) != "250" || string(m["count_truncated"]) != "false" {
		t.Errorf("count=true: %s", jsonOf(m))
	}
	if m := meta("count", "true", "filter[locked]", "true"); string(m["count"]) != itoa(int64(locked)) {
		t.Errorf("count=true with a filter: %s, want %d", jsonOf(m), locked)
	}
	if m := meta("count", "false"); string(m["count"]) != "null" || m["count_truncated"] != nil {
		t.Errorf("count=false: %s", jsonOf(m))
	}
	start := time.Now()
	if m := meta(); string(m["count"]) != "250" {
		t.Errorf("count absent: %s", jsonOf(m))
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Error("count absent was not delayed by CountDelay")
	}
	if err := e.sim.UpdateKnobs(func(k *Knobs) { k.CountTruncateAt = 100 }); err != nil {
		t.Fatal(err)
	}
	if m := meta("count", "true"); string(m["count"]) != "100" || string(m["count_truncated"]) != "true" {
		t.Errorf("truncated count: %s", jsonOf(m))
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestPageSizeAndLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 1200})
	if n := len(e.getDoc("/api/v2/users", http.StatusOK).list(t)); n != DefaultPageSize {
		t.Errorf("default page: %d users", n)
	}
	if n := len(e.getDoc(q("/api/v2/users", "page[size]", "5000"), http.StatusOK).list(t)); n != MaxPageSize {
		t.Errorf("page[size]=5000: %d users, want the cap %d", n, MaxPageSize)
	}
	path := "/api/v2/users?filter%5Blocked%5D=false&sort=-updatedAt&page%5Bsize%5D=30&fields%5Buser%5D=updatedAt&count=false"
	d := e.getDoc(path, http.StatusOK)
	next, err := url.Parse(d.Links.Next)
	if err != nil || next.Scheme != "http" || next.Host != e.srv.Listener.Addr().String() || next.Path != "/api/v2/users" {
		t.Fatalf("links.next = %q", d.Links.Next)
	}
	v := next.Query()
	if v.Get("filter[locked]") != "false" || v.Get("sort") != "-updatedAt" || v.Get("page[size]") != "30" ||
		v.Get("fields[user]") != "updatedAt" || v.Get("count") != "false" || v.Get("page[after]") == "" {
		t.Errorf("links.next lost parameters: %q", d.Links.Next)
	}
	if d.Links.First != e.srv.URL+path {
		t.Errorf("links.first = %q, want %q", d.Links.First, e.srv.URL+path)
	}
	tok, err := decodeToken(v.Get("page[after]"))
	if err != nil || tok.SP != "-updatedAt" || tok.CN != "ApiV2::UsersController" || len(tok.SV) != 1 || tok.ID == 0 {
		t.Errorf("cursor = %+v, %v", tok, err)
	}
	// Forwarded scheme, last page and empty results.
	r := e.do(http.MethodGet, q("/api/v2/users", "page[size]", "2"), http.Header{"X-Forwarded-Proto": {"https"}})
	var fd doc
	mustUnmarshal(t, r.body, &fd)
	if !strings.HasPrefix(fd.Links.Next, "https://") {
		t.Errorf("X-Forwarded-Proto https: next = %q", fd.Links.Next)
	}
	last := e.getDoc(q("/api/v2/users", "filter[id]", "1199..inf", "page[size]", "2"), http.StatusOK)
	if last.Links == nil || last.Links.Next != "" || last.Links.First == "" {
		t.Errorf("last page links = %+v", last.Links)
	}
	empty := e.getDoc(q("/api/v2/users", "filter[id]", "5000"), http.StatusOK)
	if string(empty.Data) != "[]" || empty.Links != nil {
		t.Errorf("empty page: data %s, links %+v", empty.Data, empty.Links)
	}
	// A cursor issued for one sort is refused for another.
	bad := e.getDoc(q("/api/v2/users", "sort", "email", "page[after]", v.Get("page[after]")), http.StatusBadRequest)
	if bad.Errors[0].Source.Parameter != "page[after]" {
		t.Errorf("mismatched cursor: %+v", bad.Errors)
	}
	// The page cap knob.
	if err := e.sim.UpdateKnobs(func(k *Knobs) { k.PageSizeCap = 7 }); err != nil {
		t.Fatal(err)
	}
	if n := len(e.getDoc(q("/api/v2/users", "page[size]", "50"), http.StatusOK).list(t)); n != 7 {
		t.Errorf("PageSizeCap 7: %d users", n)
	}
}

func TestMetaFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 200})
	d := e.getDoc(q("/api/v2/users", "provideDataConnections", "true", "provideAuthorizationMeta", "true", "page[size]", "200"), http.StatusOK)
	empty, full := 0, 0
	for _, u := range d.list(t) {
		truth, _ := e.sim.User(u.id(t))
		if string(u.Meta["dataConnections"]) != string(truth.DataConnections) {
			t.Fatalf("user %d dataConnections %s, truth %s", truth.ID, u.Meta["dataConnections"], truth.DataConnections)
		}
		if string(u.Meta["canWrite"]) != "true" {
			t.Fatalf("canWrite = %s", u.Meta["canWrite"])
		}
		var conns []struct {
			Provider   string `json:"provider"`
			Connected  *bool  `json:"connected"`
			ExternalID string `json:"externalId"`
		}
		mustUnmarshal(t, u.Meta["dataConnections"], &conns)
		if len(conns) == 0 {
			empty++
		} else {
			full++
		}
		for _, c := range conns {
			if c.Provider == "" || c.Connected == nil || c.ExternalID == "" {
				t.Fatalf("connection %+v", c)
			}
		}
	}
	if empty == 0 || full == 0 {
		t.Errorf("%d users without connections and %d with: want both", empty, full)
	}
	for _, u := range e.getDoc("/api/v2/users", http.StatusOK).list(t) {
		if u.Meta != nil {
			t.Fatalf("meta without the flags: %v", u.Meta)
		}
	}
	if err := e.sim.UpdateKnobs(func(k *Knobs) { k.DenyWrite = true }); err != nil {
		t.Fatal(err)
	}
	team := e.getDoc(q("/api/v2/teams", "provideAuthorizationMeta", "true"), http.StatusOK).list(t)[0]
	if string(team.Meta["canWrite"]) != "false" || team.Meta["dataConnections"] != nil {
		t.Errorf("team meta with DenyWrite: %v", team.Meta)
	}
}
