package syncer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// hostileQuery is what a hostile next link adds: parameters usersync never
// sends, under names a deny-list misses.
const hostileQuery = "&access_token=S3CRET&X-Amz-Signature=S3CRET&accessToken=S3CRET&auth_token=S3CRET&oauth_token=S3CRET" +
	"&x-api-key=S3CRET&access_token%00=S3CRET&session=S3CRET&jwt=S3CRET&S3CRET"

// checkpointEnv is a 500-user simulator whose users next links carry
// hostileQuery and whose third users request fails (not retried) while
// failing is set, so that the first run fails with a checkpoint. It
// records every users query it receives.
type checkpointEnv struct {
	*testEnv
	failing atomic.Bool
	mu      sync.Mutex
	queries []string
}

func newCheckpointEnv(t *testing.T) *checkpointEnv {
	t.Helper()
	ce := &checkpointEnv{}
	ce.failing.Store(true)
	var usersPages atomic.Int64
	next := regexp.MustCompile(`"next":"(http://)([^"]*)"`)
	ce.testEnv = newEnvWith(t, apisim.Options{Users: 500}, func(sim *apisim.Server) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v2/users" {
				sim.ServeHTTP(w, r)
				return
			}
			ce.mu.Lock()
			ce.queries = append(ce.queries, r.URL.RawQuery)
			ce.mu.Unlock()
			if usersPages.Add(1) == 3 && ce.failing.Load() {
				http.Error(w, "down", http.StatusBadRequest) // not retried: the run fails with its checkpoint
				return
			}
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, r)
			body := next.ReplaceAll(rec.Body.Bytes(), []byte(`"next":"${1}${2}`+hostileQuery+`"`))
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	})
	return ce
}

// failFirstRun runs a full sync that fails at page 3 and returns the
// checkpoint it stored.
func (ce *checkpointEnv) failFirstRun(t *testing.T, cfg syncer.Config) string {
	t.Helper()
	if _, err := runAlone(t, context.Background(), ce.syncer(cfg), syncer.Request{Kind: warehouse.KindFull}); err == nil {
		t.Fatal("the first run succeeded; want it failed at page 3")
	}
	var stored string
	if err := ce.store.Pool().QueryRow(context.Background(), `SELECT coalesce(next_url, '') FROM "`+ce.store.Schema()+`".sync_runs`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

// resume runs the sync again, the API healthy, and checks that it resumed
// to all 500 users from the checkpoint's cursor, sending no hostile
// parameter in the resumed request.
func (ce *checkpointEnv) resume(t *testing.T, cfg syncer.Config) {
	t.Helper()
	ce.failing.Store(false)
	ce.mu.Lock()
	ce.queries = nil
	ce.mu.Unlock()
	sum := ce.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
	if !sum.Resumed || sum.Fetched != 500 {
		t.Errorf("second run: resumed %v, fetched %d; want the first resumed to 500 users", sum.Resumed, sum.Fetched)
	}
	ce.mu.Lock()
	defer ce.mu.Unlock()
	// Later requests follow the API's own next links, as sent to the API.
	if len(ce.queries) == 0 || !strings.Contains(ce.queries[0], "page%5Bafter%5D=") || strings.Contains(ce.queries[0], "S3CRET") {
		t.Errorf("the resumed run's first users request %q, want one with the checkpoint's cursor and nothing else of the link", ce.queries)
	}
	ce.assertMirrors(t)
}

// TestCheckpointHoldsNoCredential: next links carrying parameters usersync
// never sends (access_token, accessToken, x-api-key, session, jwt, a
// presigned-URL signature...) are stored in sync_runs.next_url without
// them, where analysts may read them: the checkpoint is the users URL on
// the configured base with the cursor and usersync's own parameters. A run
// resumed from it completes.
func TestCheckpointHoldsNoCredential(t *testing.T) {
	t.Parallel()
	ce := newCheckpointEnv(t)
	cfg := syncer.Config{PageSize: 100}
	stored := ce.failFirstRun(t, cfg)
	if !strings.HasPrefix(stored, ce.srv.URL+"/api/v2/users?") || !strings.Contains(stored, "page%5Bafter%5D=") || strings.Contains(stored, "S3CRET") {
		t.Fatalf("stored next_url %q, want the users URL with the cursor and without the hostile parameters", stored)
	}
	ce.resume(t, cfg)
}

// TestResumeSanitizesStoredCheckpoint: a checkpoint stored by an older
// version, next link verbatim (another host, a path of its own, hostile
// parameters), is rebuilt on the configured base URL before it is
// followed: the run resumes from its cursor on the API, and neither the
// other host nor the API receives anything else of it.
func TestResumeSanitizesStoredCheckpoint(t *testing.T) {
	t.Parallel()
	ce := newCheckpointEnv(t)
	var evil atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { evil.Add(1) }))
	t.Cleanup(other.Close)
	cfg := syncer.Config{PageSize: 100}
	stored := ce.failFirstRun(t, cfg)
	_, query, _ := strings.Cut(stored, "?")
	old := other.URL + "/S3CRET/users?" + query + hostileQuery
	if _, err := ce.store.Pool().Exec(context.Background(), `UPDATE "`+ce.store.Schema()+`".sync_runs SET next_url = $1`, old); err != nil {
		t.Fatal(err)
	}
	ce.resume(t, cfg)
	if n := evil.Load(); n != 0 {
		t.Errorf("the stored link's host received %d requests", n)
	}
}
