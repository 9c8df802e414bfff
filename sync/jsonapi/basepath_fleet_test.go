package jsonapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
)

// TestFleetLinkIntoAnotherAccount: over real HTTP, the
// simulator's fleet serves accounts a, ab and b under /accounts/<name>, and
// a default dataset that accepts a's token at the unprefixed paths. Account
// a's first users page comes with a next link (or a redirect) into another
// account's path; the client refuses it before sending anything there, and
// the refusal of a next link is final.
func TestFleetLinkIntoAnotherAccount(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(t)
	const shared = "sim-token-of-a-and-default"
	fleet := apisim.NewFleet(apisim.FleetOptions{Seed: 41, Now: clock.Now,
		Default: &apisim.Options{Seed: 41, Users: 30, Token: shared, Now: clock.Now},
		Accounts: []apisim.AccountOptions{
			{Name: "a", Options: apisim.Options{Users: 30, Token: shared}},
			{Name: "ab", Options: apisim.Options{Users: 30}},
			{Name: "b", Options: apisim.Options{Users: 30}},
		}})
	for _, tc := range []struct {
		name, target string
		redirect     bool
	}{
		{"next into b", "/accounts/b/api/v2/users?page%5Bsize%5D=10", false},
		{"next into ab", "/accounts/ab/api/v2/users?page%5Bsize%5D=10", false},
		{"next up into b", "/accounts/a/../b/api/v2/users?page%5Bsize%5D=10", false},
		{"next up into b, encoded", "/accounts/a%2f..%2fb/api/v2/users?page%5Bsize%5D=10", false},
		{"next into the default dataset", "/api/v2/users?page%5Bsize%5D=10", false},
		{"redirect into b", "/accounts/b/api/v2/users?page%5Bsize%5D=10", true},
		{"redirect up into b", "/accounts/a/%2e%2e/b/api/v2/users?page%5Bsize%5D=10", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var escaped atomic.Int64
			var srvURL string
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if p := path.Clean(r.URL.Path); !strings.HasPrefix(p, "/accounts/a/") {
					escaped.Add(1)
				}
				if r.URL.Path != "/accounts/a/api/v2/users" || r.URL.Query().Has("page[after]") {
					fleet.ServeHTTP(w, r)
					return
				}
				if tc.redirect {
					// Set by hand: http.Redirect would clean the dot segments.
					w.Header().Set("Location", srvURL+tc.target)
					w.WriteHeader(http.StatusFound)
					return
				}
				serveWithNext(t, w, r, fleet, srvURL+tc.target)
			})
			srvURL = srv.URL
			c := newClient(t, srv.URL+"/accounts/a", clock, func(o *Options) {
				o.Auth, o.MaxAttempts = StaticToken(shared), 1
			})
			it := c.Collection("users", Query{}.PageSize(10))
			page, err := it.Next(context.Background())
			if tc.redirect {
				var re *RedirectError
				if !errors.As(err, &re) || re.Reason == "" || !strings.Contains(err.Error(), srv.Listener.Addr().String()) {
					t.Errorf("first page: %d rows, %v; want a *RedirectError off the base path, naming the host", rows(page), err)
				}
			} else {
				if err != nil || rows(page) != 10 {
					t.Fatalf("first page: %d rows, %v", rows(page), err)
				}
				for range 2 { // the refusal is final
					page, err = it.Next(context.Background())
					var nle *NextLinkError
					if !errors.As(err, &nle) || !strings.Contains(err.Error(), "refusing next link "+srv.URL+"/") {
						t.Errorf("next page: %d rows, %v; want a *NextLinkError naming the link", rows(page), err)
					}
				}
			}
			if err != nil && strings.Contains(err.Error(), shared) {
				t.Errorf("the error holds the token: %v", err)
			}
			if n := escaped.Load(); n != 0 {
				t.Errorf("%d requests with account a's token left its path /accounts/a", n)
			}
		})
	}
}

// rows is the number of resources of page, -1 for no page.
func rows(page *Page) int {
	if page == nil {
		return -1
	}
	return len(page.Data)
}

// serveWithNext serves r from fleet with the page's links.next set to next.
func serveWithNext(t *testing.T, w http.ResponseWriter, r *http.Request, fleet http.Handler, next string) {
	rec := httptest.NewRecorder()
	fleet.ServeHTTP(rec, r)
	var doc map[string]any
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Errorf("the fleet's page: %v", err)
		return
	}
	links, ok := doc["links"].(map[string]any)
	if !ok || links["next"] == nil {
		t.Errorf("the fleet's first page has no next link: %v", doc["links"])
		return
	}
	links["next"] = next
	body, err := json.Marshal(doc)
	if err != nil {
		t.Errorf("encoding the page: %v", err)
		return
	}
	writeDoc(w, rec.Code, string(body))
}
