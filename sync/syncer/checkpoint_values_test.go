package syncer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestHostileValuesUnderSentNames: a next link that puts text of the
// server's own under a parameter name usersync sends (a changed filter or
// sort, a filter usersync did not send, a cursor that is not clean or too
// long) is refused, and neither the run's stored next_url nor its error
// holds that text: the checkpoint keeps usersync's own values and a clean
// cursor only.
func TestHostileValuesUnderSentNames(t *testing.T) {
	t.Parallel()
	for _, hostile := range []string{
		"&sort=S3CRETtoken",
		"&filter%5BupdatedAt%5D=S3CRETtoken",
		"&filter%5Bemail%5D=S3CRETtoken",
		"&include=S3CRETtoken",
		"&page%5Bafter%5D=S3CRET%20token%22",
		"&page%5Bafter%5D=" + strings.Repeat("S3CRETtoken", 100),
		"&page%5Bsize%5D=5000",
	} {
		next := regexp.MustCompile(`"next":"(http://[^"]*)"`)
		e := newEnvWith(t, apisim.Options{Users: 300}, func(sim *apisim.Server) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v2/users" {
					sim.ServeHTTP(w, r)
					return
				}
				rec := httptest.NewRecorder()
				sim.ServeHTTP(rec, r)
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.Header().Del("Content-Length")
				w.WriteHeader(rec.Code)
				_, _ = w.Write(next.ReplaceAll(rec.Body.Bytes(), []byte(`"next":"${1}`+hostile+`"`)))
			})
		})
		since, until := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, req := range []syncer.Request{{Kind: warehouse.KindFull}, {Kind: warehouse.KindBackfill, Since: &since, Until: &until}} {
			_, err := runAlone(t, context.Background(), e.syncer(syncer.Config{PageSize: 100}), req)
			if err == nil || !strings.Contains(err.Error(), "refusing next link") || strings.Contains(err.Error(), "S3CRET") {
				t.Errorf("%s %s: run error %v; want the next link refused, without the hostile value", hostile, req.Kind, err)
			}
		}
		rows, err := e.store.Pool().Query(context.Background(), `SELECT kind, coalesce(next_url, ''), coalesce(error, '') FROM "`+e.store.Schema()+`".sync_runs`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var kind, stored, msg string
			if err := rows.Scan(&kind, &stored, &msg); err != nil {
				t.Fatal(err)
			}
			n++
			if strings.Contains(stored+msg, "S3CRET") || !strings.Contains(stored, "page%5Bafter%5D=") || msg == "" {
				t.Errorf("%s %s: stored next_url %q, error %q; want a cursor, an error, and neither holding the hostile value", hostile, kind, stored, msg)
			}
		}
		if rows.Err() != nil || n != 2 {
			t.Errorf("%s: %d runs stored (%v), want 2", hostile, n, rows.Err())
		}
	}
}
