package jsonapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/jsondoc"
)

func TestCollectionFirstRequestQueryAndHeaders(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeDoc(w, http.StatusOK, pageBody(`{}`, 1, 2))
	})
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	from := time.Date(2026, 11, 22, 10, 15, 0, 123987654, time.UTC)
	q := Query{}.Filter("updatedAt", Range(from, time.Time{})).Sort("updatedAt").PageSize(1000).
		Fields("user").Include("role", "teams").Filter("id", IDs(1, 2, 3)).FilterRelationship("teams", 7, 8)
	page, err := c.Collection("users", q).Next(context.Background())
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if len(page.Data) != 2 || page.NextURL != "" || page.Number != 1 {
		t.Errorf("page: %d resources, next %q, number %d", len(page.Data), page.NextURL, page.Number)
	}
	reqs := rec.all()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodGet || r.Path != "/api/v2/users" {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	assertQuery(t, r.Query, map[string]string{
		"filter[updatedAt]": "2026-11-22T10:15:00.123Z..inf",
		"sort":              "updatedAt",
		"count":             "false",
		"page[size]":        "1000",
		"fields[user]":      "",
		"include":           "role,teams",
		"filter[id]":        "1,2,3",
		"filter[teams][id]": "7,8",
	})
	wantRaw := "count=false&fields%5Buser%5D=&filter%5Bid%5D=1%2C2%2C3&filter%5Bteams%5D%5Bid%5D=7%2C8" +
		"&filter%5BupdatedAt%5D=2026-11-22T10%3A15%3A00.123Z..inf&include=role%2Cteams&page%5Bsize%5D=1000&sort=updatedAt"
	if r.RawQuery != wantRaw {
		t.Errorf("raw query\n got %s\nwant %s", r.RawQuery, wantRaw)
	}
	assertHeaders(t, r.Header)
}

func assertHeaders(t *testing.T, h http.Header) {
	t.Helper()
	if got := h.Get("Accept"); got != "application/vnd.api+json" {
		t.Errorf("Accept = %q", got)
	}
	if got := h.Get("Authorization"); got != bearerStatic {
		t.Errorf("Authorization = %q", got)
	}
	if got := h.Get("User-Agent"); got != testUserAgent {
		t.Errorf("User-Agent = %q", got)
	}
}

func TestCollectionCountTrueAndFlags(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeDoc(w, http.StatusOK, `{"data":[],"meta":{"count":0,"count_truncated":false}}`)
	})
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	q := Query{}.Count(true).ProvideDataConnections().ProvideAuthorizationMeta()
	page, err := c.Collection("teams", q).Next(context.Background())
	if err != nil || string(page.Meta) != `{"count":0,"count_truncated":false}` {
		t.Fatalf("Next = %+v, %v", page, err)
	}
	r := rec.all()[0]
	if r.Path != "/api/v2/teams" {
		t.Errorf("path %s", r.Path)
	}
	assertQuery(t, r.Query, map[string]string{"count": "true", "provideDataConnections": "true", "provideAuthorizationMeta": "true"})
}

func TestGetSingleResource(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeDoc(w, http.StatusOK, `{"data":{"type":"user","id":"42","attributes":{"name":"Ada"}},"included":[{"type":"role","id":3}]}`)
	})
	c := newClient(t, srv.URL+"/prefix/", newFakeClock(t), nil)
	doc, err := c.Get(context.Background(), "users/42", Query{}.Include("role"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.DataShape != jsondoc.ShapeOne || doc.Data[0].ID != 42 || len(doc.Included) != 1 {
		t.Errorf("doc = %+v", doc)
	}
	r := rec.all()[0]
	if r.Path != "/prefix/api/v2/users/42" || r.Query["include"][0] != "role" {
		t.Errorf("request %s?%s", r.Path, r.RawQuery)
	}
	if st := c.Stats(); st.ByEndpoint["users"] != 1 {
		t.Errorf("ByEndpoint = %v", st.ByEndpoint)
	}
}

func TestCollectionInvalidQueryFailsWithoutRequest(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { rec.add(r) })
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	it := c.Collection("users", Query{}.Sort("role.name"))
	for range 2 {
		_, err := it.Next(context.Background())
		var qe *QueryError
		if !errors.As(err, &qe) || !qe.Deprecated {
			t.Fatalf("Next error = %v, want a deprecated *QueryError", err)
		}
	}
	if rec.count() != 0 {
		t.Errorf("%d requests sent", rec.count())
	}
}

func TestNewClientValidation(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"no base":       {Auth: StaticToken("x")},
		"relative base": {BaseURL: "/api", Auth: StaticToken("x")},
		"ftp base":      {BaseURL: "ftp://h", Auth: StaticToken("x")},
		"userinfo":      {BaseURL: "https://u:" + secretInBase + "@h", Auth: StaticToken("x")},
		"no auth":       {BaseURL: "https://h"},
		"negative":      {BaseURL: "https://h", Auth: StaticToken("x"), MaxAttempts: -1},
	} {
		_, err := NewClient(opts)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), "Options.") {
			t.Errorf("%s: error %q does not name the option", name, err)
		}
		if strings.Contains(err.Error(), secretInBase) {
			t.Errorf("%s: error leaks a secret: %q", name, err)
		}
	}
}

func TestSystemClockSleepHonoursCancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := (SystemClock{}).Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Error("Sleep ignored the cancelled context")
	}
}
