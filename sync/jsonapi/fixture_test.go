package jsonapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Distinctive secrets: no error string or log line may ever contain them.
const (
	secretAccess   = "ACCESS-zq9x7-SECRET"
	secretRefresh  = "REFRESH-k3m8p-SECRET"
	secretClient   = "CLIENT-w5t2v-SECRET"
	secretRotated  = "ROTATED-h6j4n-SECRET"
	secretInBase   = "USERINFO-b8c1d-SECRET"
	testUserAgent  = "usersync/0.1.0"
	testAPIPrefix  = "/api/v2/"
	bearerStatic   = "Bearer " + secretAccess
	fakeClockStart = "2026-11-22T10:00:00Z"
)

// fakeClock is a Clock whose Sleep returns at once and moves time forward.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock(t *testing.T) *fakeClock {
	t.Helper()
	start, err := time.Parse(time.RFC3339, fakeClockStart)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeClock{now: start}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return nil
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fakeClock) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// newServer starts an httptest server closed at the end of the test.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a client of srvURL with a static token, a fake clock
// and fast retries; change tweaks the options.
func newClient(t *testing.T, srvURL string, clock *fakeClock, change func(*Options)) *Client {
	t.Helper()
	opts := Options{
		BaseURL:     srvURL,
		Auth:        StaticToken(secretAccess),
		UserAgent:   testUserAgent,
		Clock:       clock,
		BackoffBase: 100 * time.Millisecond,
	}
	if change != nil {
		change(&opts)
	}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// request is what a test server saw of one request.
type request struct {
	Method   string
	Path     string
	RawQuery string
	Query    map[string][]string
	Header   http.Header
}

// recorder records the requests a test server receives.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (rec *recorder) add(r *http.Request) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.reqs = append(rec.reqs, request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Query: r.URL.Query(), Header: r.Header.Clone()})
	return len(rec.reqs)
}

func (rec *recorder) all() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]request(nil), rec.reqs...)
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// writeDoc writes a JSON:API body with the given status.
func writeDoc(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// pageBody is a small users page of ids with a raw "links" member value
// (such as `{"next":"..."}`, `{"next":null}` or `{}`).
func pageBody(links string, ids ...int) string {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"user","id":` + strconv.Itoa(id) + `,"attributes":{"email":"u` + strconv.Itoa(id) + `@example.com"}}`)
	}
	b.WriteString(`],"meta":{"count":null},"links":` + links + `}`)
	return b.String()
}
