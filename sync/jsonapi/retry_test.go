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

func TestRetry5xxThenSuccess(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch rec.add(r) {
		case 1:
			writeDoc(w, http.StatusServiceUnavailable, `{"errors":[{"id":"scheduledServerMaintenance"}]}`)
		case 2:
			writeDoc(w, http.StatusInternalServerError, `<html>oops</html>`)
		default:
			writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
		}
	})
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, nil)
	page, err := c.Collection("users", Query{}).Next(context.Background())
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("Next = %v, %v", page, err)
	}
	sleeps := clock.Sleeps()
	if len(sleeps) != 2 {
		t.Fatalf("sleeps %v", sleeps)
	}
	// Jittered exponential backoff from 100ms: [50ms,100ms], then [100ms,200ms].
	for i, bounds := range [][2]time.Duration{{50 * time.Millisecond, 100 * time.Millisecond}, {100 * time.Millisecond, 200 * time.Millisecond}} {
		if sleeps[i] < bounds[0] || sleeps[i] > bounds[1] {
			t.Errorf("sleep %d = %s, want within %v", i, sleeps[i], bounds)
		}
	}
	st := c.Stats()
	if st.Requests != 3 || st.Retries != 2 || st.ByStatus[503] != 1 || st.ByStatus[500] != 1 ||
		st.ByStatus[200] != 1 || st.ByStatusClass["5xx"] != 2 || st.ByStatusClass["2xx"] != 1 || st.BytesRead == 0 {
		t.Errorf("stats %+v", st)
	}
	// The same request was repeated, unchanged.
	reqs := rec.all()
	if reqs[0].RawQuery != reqs[2].RawQuery {
		t.Errorf("retry changed the query: %s vs %s", reqs[0].RawQuery, reqs[2].RawQuery)
	}
}

func TestRetryBoundedByAttempts(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeDoc(w, http.StatusInternalServerError, `{"errors":[{"id":"internalError","title":"Internal Server Error"}]}`)
	})
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, func(o *Options) { o.MaxAttempts = 4 })
	_, err := c.Collection("users", Query{}).Next(context.Background())
	var re *ResponseError
	if !errors.As(err, &re) || re.StatusCode != 500 || len(re.Errors) != 1 {
		t.Fatalf("error %v, want a *ResponseError 500", err)
	}
	if !strings.Contains(err.Error(), "fetching users page 1: giving up after 4 attempts: GET /api/v2/users?count=false: 500 Internal Server Error: internalError: Internal Server Error") {
		t.Errorf("error message %q", err)
	}
	if rec.count() != 4 || len(clock.Sleeps()) != 3 {
		t.Errorf("%d requests, sleeps %v", rec.count(), clock.Sleeps())
	}
}

func TestRetryBoundedByTime(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.WriteHeader(http.StatusBadGateway)
	})
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, func(o *Options) {
		o.MaxAttempts = 100
		o.BackoffBase = time.Second
		o.MaxRetryTime = 10 * time.Second
	})
	_, err := c.Collection("users", Query{}).Next(context.Background())
	var re *ResponseError
	if !errors.As(err, &re) || re.StatusCode != 502 || !strings.Contains(err.Error(), "giving up after") {
		t.Fatalf("error %v", err)
	}
	var total time.Duration
	for _, d := range clock.Sleeps() {
		total += d
	}
	if total > 10*time.Second || rec.count() < 3 || rec.count() > 6 {
		t.Errorf("%d requests, slept %s", rec.count(), total)
	}
}

func TestRetryTruncatedAndInvalidBodies(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch rec.add(r) {
		case 1: // the connection closes before the declared length
			w.Header().Set("Content-Length", "5000")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"data":[{"type":"user","id":1`))
		case 2: // complete, but cut JSON
			writeDoc(w, http.StatusOK, `{"data":[{"type":"user","id":1},`)
		case 3: // not JSON:API
			writeDoc(w, http.StatusOK, `<html>proxy error</html>`)
		default:
			writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
		}
	})
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, nil)
	page, err := c.Collection("users", Query{}).Next(context.Background())
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("Next = %v, %v", page, err)
	}
	if rec.count() != 4 || c.Stats().Retries != 3 {
		t.Errorf("%d requests, stats %+v", rec.count(), c.Stats())
	}
}

func TestRetryInvalidBodyGivesUpWithDecodeError(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeDoc(w, http.StatusOK, `{"data":[{"type":"user","id":1}`)
	})
	c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) { o.MaxAttempts = 2 })
	_, err := c.Collection("users", Query{}).Next(context.Background())
	var de *jsondoc.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v, want a *DecodeError", err)
	}
}

func TestRetryConnectionResetAndTimeout(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch rec.add(r) {
		case 1: // connection reset
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case 2: // hangs until the client gives up on the attempt
			<-r.Context().Done()
		default:
			writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
		}
	})
	c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) { o.RequestTimeout = 200 * time.Millisecond })
	page, err := c.Collection("users", Query{}).Next(context.Background())
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("Next = %v, %v", page, err)
	}
	if st := c.Stats(); st.Requests != 3 || st.ByStatusClass["error"] != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestRetryHalvesPageSizeOn502And504(t *testing.T) {
	t.Parallel()
	var rec recorder
	var srvURL string
	next := "/api/v2/users?page%5Bafter%5D=abc%3D&page%5Bsize%5D=1000&sort=updatedAt&zeta=%7E"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch rec.add(r) {
		case 1:
			writeDoc(w, http.StatusOK, pageBody(`{"next":"`+srvURL+next+`"}`, 1))
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		case 3:
			w.WriteHeader(http.StatusGatewayTimeout)
		case 4:
			w.WriteHeader(http.StatusBadGateway)
		case 5:
			w.WriteHeader(http.StatusServiceUnavailable) // not a size problem
		default:
			writeDoc(w, http.StatusOK, pageBody(`{}`, 2))
		}
	})
	srvURL = srv.URL
	c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) { o.PageSizeFloor = 200; o.MaxAttempts = 10 })
	_, pages, err := walk(t, c.Collection("users", Query{}.PageSize(1000).Sort("updatedAt")))
	if err != nil {
		t.Fatal(err)
	}
	reqs := rec.all()
	want := []string{
		next,
		"/api/v2/users?page%5Bafter%5D=abc%3D&page%5Bsize%5D=500&sort=updatedAt&zeta=%7E",
		"/api/v2/users?page%5Bafter%5D=abc%3D&page%5Bsize%5D=250&sort=updatedAt&zeta=%7E",
		"/api/v2/users?page%5Bafter%5D=abc%3D&page%5Bsize%5D=200&sort=updatedAt&zeta=%7E",
		"/api/v2/users?page%5Bafter%5D=abc%3D&page%5Bsize%5D=200&sort=updatedAt&zeta=%7E",
	}
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, w := range want {
		if got := reqs[i+1].Path + "?" + reqs[i+1].RawQuery; got != w {
			t.Errorf("request %d = %s\nwant %s", i+2, got, w)
		}
	}
	if pages[1].URL != srv.URL+want[4] {
		t.Errorf("page URL %s", pages[1].URL)
	}
}

func TestHalvePageSize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"http://h/a?page[size]=1000", "http://h/a?page[size]=500"},
		{"http://h/a?x=1&page%5bsize%5d=101&y=2", "http://h/a?x=1&page%5bsize%5d=50&y=2"},
		{"http://h/a?page%5Bsize%5D=15", "http://h/a?page%5Bsize%5D=10"},
		{"http://h/a?page%5Bsize%5D=10", "http://h/a?page%5Bsize%5D=10"},
		{"http://h/a?page%5Bafter%5D=x", "http://h/a?page%5Bafter%5D=x"},
		{"http://h/a", "http://h/a"},
		{"http://h/a?page%5Bsize%5D=abc", "http://h/a?page%5Bsize%5D=abc"},
	}
	for _, tt := range tests {
		if got := halvePageSize(tt.in, 10); got != tt.want {
			t.Errorf("halvePageSize(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		body   string
		want   string
		errors []jsondoc.ErrorObject
	}{
		{404, `{"errors":[{"id":"resourceNotFound","title":"jsondoc.Resource Not Found","detail":"Could not find 'user' with jsondoc.ID '9'."}]}`,
			"GET /api/v2/users/9?count=false: 404 Not Found: resourceNotFound: Could not find 'user' with jsondoc.ID '9'.",
			[]jsondoc.ErrorObject{{ID: "resourceNotFound", Title: "jsondoc.Resource Not Found", Detail: "Could not find 'user' with jsondoc.ID '9'."}}},
		{415, `{"errors":[{"id":"unsupportedMediaType","title":"Unsupported Media Type","details":"Expected Content-Type\nheader."}]}`,
			"GET /api/v2/users/9?count=false: 415 Unsupported Media Type: unsupportedMediaType: Expected Content-Type header.",
			[]jsondoc.ErrorObject{{ID: "unsupportedMediaType", Title: "Unsupported Media Type", Detail: "Expected Content-Type\nheader."}}},
		{422, `{"errors":[{"id":"validationError","title":"Validation Error","detail":"bad","source":{"pointer":"/data"}},{"id":"second"}]}`,
			"GET /api/v2/users/9?count=false: 422 Unprocessable Entity: validationError: bad (and 1 more)",
			[]jsondoc.ErrorObject{{ID: "validationError", Title: "Validation Error", Detail: "bad", Source: jsondoc.ErrorSource{Pointer: "/data"}}, {ID: "second"}}},
		{400, `{"errors":[{"id":"filterParameter.invalid","source":{"parameter":"filter[x]"}}]}`,
			"GET /api/v2/users/9?count=false: 400 Bad Request: filterParameter.invalid",
			[]jsondoc.ErrorObject{{ID: "filterParameter.invalid", Source: jsondoc.ErrorSource{Parameter: "filter[x]"}}}},
		{403, `not json`, "GET /api/v2/users/9?count=false: 403 Forbidden", nil},
	}
	for _, tt := range tests {
		var rec recorder
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			rec.add(r)
			writeDoc(w, tt.status, tt.body)
		})
		clock := newFakeClock(t)
		c := newClient(t, srv.URL, clock, nil)
		_, err := c.Get(context.Background(), "users/9", Query{})
		var re *ResponseError
		if !errors.As(err, &re) {
			t.Errorf("%d: error %v, want a *ResponseError", tt.status, err)
			continue
		}
		if re.StatusCode != tt.status || err.Error() != tt.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%d: error %q\nwant %q", tt.status, err, tt.want)
		}
		if len(re.Errors) != len(tt.errors) || (len(tt.errors) > 0 && re.Errors[0].Detail != tt.errors[0].Detail) ||
			(len(tt.errors) > 0 && re.Errors[0].Source != tt.errors[0].Source) {
			t.Errorf("%d: error objects %+v", tt.status, re.Errors)
		}
		if rec.count() != 1 || len(clock.Sleeps()) != 0 || c.Stats().Retries != 0 {
			t.Errorf("%d: %d requests, sleeps %v", tt.status, rec.count(), clock.Sleeps())
		}
	}
}

func TestCancelledContextStopsRetries(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx, cancel := context.WithCancel(context.Background())
	clock := newFakeClock(t)
	c := newClient(t, srv.URL, clock, nil)
	cancel()
	_, err := c.Collection("users", Query{}).Next(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if rec.count() > 1 || len(clock.Sleeps()) != 0 {
		t.Errorf("%d requests, sleeps %v", rec.count(), clock.Sleeps())
	}
}
