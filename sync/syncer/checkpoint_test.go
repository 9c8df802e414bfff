package syncer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/usersync/usersync/sync/jsonapi/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestCheckpointHoldsNoCredential: next links carrying an access_token and a
// presigned-URL signature are stored in sync_runs.next_url without them,
// where analysts may read them; a run resumed from the stripped link
// completes.
func TestCheckpointHoldsNoCredential(t *testing.T) {
	t.Parallel()
	var usersPages, failing atomic.Int64
	failing.Store(1)
	next := regexp.MustCompile(`"next":"(http://)([^"]*)"`)
	e := newEnvWith(t, apisim.Options{Users: 500}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v2/users" {
				sim.ServeHTTP(w, r)
				return
			}
			if usersPages.Add(1) == 3 && failing.Load() == 1 {
				http.Error(w, "down", http.StatusBadRequest) // not retried: the run fails with its checkpoint
				return
			}
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			body := next.ReplaceAll(rec.Body.Bytes(), []byte(`"next":"${1}${2}&access_token=S3CRET-TOKEN&X-Amz-Signature=S3CRET-SIG"`))
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	})
	cfg := syncer.Config{PageSize: 100}
	if _, err := runAlone(t, context.Background(), e.syncer(cfg), syncer.Request{Kind: warehouse.KindFull}); err == nil {
		t.Fatal("the first run succeeded; want it failed at page 3")
	}
	var stored string
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT coalesce(next_url, '') FROM "`+e.store.Schema()+`".sync_runs`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored == "" || strings.Contains(stored, "S3CRET") {
		t.Fatalf("stored next_url %q, want a link without credentials", stored)
	}
	failing.Store(0)
	sum := e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	if !sum.Resumed || sum.Fetched != 500 {
		t.Errorf("second run: resumed %v, fetched %d; want the first resumed to 500 users", sum.Resumed, sum.Fetched)
	}
	e.assertMirrors(t)
}
