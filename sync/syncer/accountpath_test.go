package syncer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestNextLinkIntoAnotherAccountStopsTheRun: the simulator's fleet
// serves account a under /accounts/a and, at the unprefixed paths, a
// default dataset that accepts a's token too. Account a's first users page
// comes with a next link into the default dataset's path. The run fails
// with the refusal, nothing is sent off /accounts/a, and the warehouse
// holds account a's first page at most: nothing of the other dataset.
func TestNextLinkIntoAnotherAccountStopsTheRun(t *testing.T) {
	t.Parallel()
	const shared = "sim-token-of-a-and-default"
	fleet := apisim.NewFleet(apisim.FleetOptions{Seed: 41,
		Default:  &apisim.Options{Seed: 41, Users: 60, Token: shared},
		Accounts: []apisim.AccountOptions{{Name: "a", Options: apisim.Options{Users: 60, Token: shared}}}})
	var escaped atomic.Int64
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(path.Clean(r.URL.Path), "/accounts/a/") {
			escaped.Add(1)
		}
		if r.URL.Path != "/accounts/a/api/v2/users" || r.URL.Query().Has("page[after]") {
			fleet.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		fleet.ServeHTTP(rec, r)
		from := `"next":"` + srvURL + `/accounts/a/`
		if !strings.Contains(rec.Body.String(), from) {
			t.Errorf("account a's first page has no next link %s...", from)
		}
		body := strings.Replace(rec.Body.String(), from, `"next":"`+srvURL+`/`, 1)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	srvURL = srv.URL

	ctx := context.Background()
	e := &testEnv{tb: t, srv: srv, client: newClient(t, srv.URL+"/accounts/a", jsonapi.StaticToken(shared)), store: migratedStore(t, schematest.NewPool(t, 8))}
	_, err := runAlone(t, ctx, e.syncer(syncer.Config{PageSize: 20}), syncer.Request{Kind: warehouse.KindFull})
	if err == nil || !strings.Contains(err.Error(), "refusing next link "+srv.URL+"/api/v2/users") ||
		!strings.Contains(err.Error(), "not under the base URL's path /accounts/a") {
		t.Errorf("run error %v; want the next link refused, naming it and the base path", err)
	}
	if n := escaped.Load(); n != 0 {
		t.Errorf("%d requests with account a's token left its path /accounts/a", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users`); n > 20 {
		t.Errorf("%d users in the warehouse; want account a's first page of 20 at most", n)
	}
}
