package apisim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testEpoch is the fixed "now" of the tests' clocks.
var testEpoch = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// clock is an injectable clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: testEpoch} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a simulator behind a real HTTP server.
type env struct {
	t     *testing.T
	sim   *Server
	srv   *httptest.Server
	clock *clock
	token string
}

// newEnv starts a simulator with opts (a test clock unless opts.Now is set).
func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	c := newClock()
	if opts.Now == nil {
		opts.Now = c.Now
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	e := &env{t: t, sim: New(opts), clock: c, token: "test-token"}
	if opts.Token != "" {
		e.token = opts.Token
	}
	e.srv = httptest.NewServer(e.sim)
	t.Cleanup(e.srv.Close)
	return e
}

// response is a fully read HTTP response.
type response struct {
	status int
	header http.Header
	body   []byte
	err    error // reading the body failed (truncation)
}

// do sends a request with the env's bearer token; path may be absolute.
func (e *env) do(method, path string, header http.Header) response {
	e.t.Helper()
	u := path
	if len(u) > 0 && u[0] == '/' {
		u = e.srv.URL + path
	}
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

func (e *env) get(path string) response {
	e.t.Helper()
	r := e.do(http.MethodGet, path, nil)
	if r.err != nil {
		e.t.Fatalf("GET %s: reading body: %v", path, r.err)
	}
	return r
}

// doc is a decoded JSON:API document.
type doc struct {
	Data     json.RawMessage `json:"data"`
	Included []resource      `json:"included"`
	Links    *struct {
		First string `json:"first"`
		Next  string `json:"next"`
	} `json:"links"`
	Meta   map[string]json.RawMessage `json:"meta"`
	Errors []apiErrorJSON             `json:"errors"`
}

type apiErrorJSON struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Detail  string `json:"detail"`
	Details string `json:"details"`
	Source  struct {
		Parameter string `json:"parameter"`
	} `json:"source"`
}

type resource struct {
	Type          string                     `json:"type"`
	ID            json.RawMessage            `json:"id"`
	Attributes    map[string]json.RawMessage `json:"attributes"`
	Relationships map[string]relationship    `json:"relationships"`
	Links         map[string]string          `json:"links"`
	Meta          map[string]json.RawMessage `json:"meta"`
}

type relationship struct {
	Data  json.RawMessage   `json:"data"`
	Links map[string]string `json:"links"`
}

// id returns the resource id, accepting a number or a numeric string.
func (r resource) id(t *testing.T) int64 {
	t.Helper()
	s := string(r.ID)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("resource id %s: %v", r.ID, err)
	}
	return n
}

// relIDs returns the ids of a relationship's data (to-one: zero or one).
func (r resource) relIDs(t *testing.T, name string) []int64 {
	t.Helper()
	rel, ok := r.Relationships[name]
	if !ok {
		t.Fatalf("%s %s has no relationship %s", r.Type, r.ID, name)
	}
	var one *resource
	var many []resource
	switch {
	case string(rel.Data) == "null":
		return []int64{}
	case len(rel.Data) > 0 && rel.Data[0] == '[':
		mustUnmarshal(t, rel.Data, &many)
	default:
		mustUnmarshal(t, rel.Data, &one)
		many = []resource{*one}
	}
	out := []int64{}
	for _, m := range many {
		out = append(out, m.id(t))
	}
	return out
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %.300s: %v", b, err)
	}
}

// getDoc GETs path and decodes the document, failing unless the status is want.
func (e *env) getDoc(path string, want int) doc {
	e.t.Helper()
	r := e.get(path)
	if r.status != want {
		e.t.Fatalf("GET %s: status %d, want %d: %.500s", path, r.status, want, r.body)
	}
	var d doc
	mustUnmarshal(e.t, r.body, &d)
	return d
}

// list returns the primary resources of a collection document.
func (d doc) list(t *testing.T) []resource {
	t.Helper()
	var out []resource
	mustUnmarshal(t, d.Data, &out)
	return out
}

// walk follows links.next from path and returns every resource and the
// number of pages; between pages it calls between (if not nil).
func (e *env) walk(path string, between func(page int)) ([]resource, int) {
	e.t.Helper()
	var all []resource
	pages := 0
	for path != "" {
		d := e.getDoc(path, http.StatusOK)
		all = append(all, d.list(e.t)...)
		pages++
		path = ""
		if d.Links != nil && d.Links.Next != "" {
			path = d.Links.Next
		}
		if pages > 100_000 {
			e.t.Fatal("walk does not end")
		}
		if between != nil && path != "" {
			between(pages)
		}
	}
	return all, pages
}

func ids(t *testing.T, rs []resource) []int64 {
	t.Helper()
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.id(t)
	}
	return out
}

func sortedIDs(t *testing.T, rs []resource) []int64 {
	t.Helper()
	out := ids(t, rs)
	slices.Sort(out)
	return out
}

func truthIDs(rs []Resource) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// attrString decodes a string attribute (or "" for null).
func attrString(t *testing.T, r resource, name string) string {
	t.Helper()
	var s *string
	mustUnmarshal(t, r.Attributes[name], &s)
	if s == nil {
		return ""
	}
	return *s
}

// q builds a path with a query from key/value pairs, encoded the way
// url.Values does (brackets percent-encoded).
func q(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

func ms(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
