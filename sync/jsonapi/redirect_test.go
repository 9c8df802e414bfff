package jsonapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// elsewhere is a server that records what reaches it.
type elsewhere struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // method, Authorization and body of each request
}

func newElsewhere(t *testing.T) *elsewhere {
	e := &elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.requests = append(e.requests, r.Method+" "+r.Header.Get("Authorization")+" "+string(body))
		e.mu.Unlock()
		writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *elsewhere) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

// TestRedirectsKeepCredentials: the API client follows no redirect off the
// configured origin (another port, another host, https to http), with its
// own HTTP client or the caller's; the bearer token never reaches the other
// origin, the error names both origins, and the request is not retried.
// A redirect within the origin is followed.
func TestRedirectsKeepCredentials(t *testing.T) {
	t.Parallel()
	other := newElsewhere(t)
	var hits int
	var mu sync.Mutex
	redirectTo := func(target string, code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits++
			mu.Unlock()
			http.Redirect(w, r, target+"/api/v2/users?page=2&access_token=zz", code)
		}
	}
	tests := []struct {
		name   string
		server func() *httptest.Server
		client func(*httptest.Server) *http.Client // nil: the client's own
	}{
		{"302 to another port", func() *httptest.Server { return httptest.NewServer(redirectTo(other.URL, http.StatusFound)) }, nil},
		{"307 to another port, caller's client", func() *httptest.Server {
			return httptest.NewServer(redirectTo(other.URL, http.StatusTemporaryRedirect))
		}, func(*httptest.Server) *http.Client { return &http.Client{} }},
		{"https to http", func() *httptest.Server {
			return httptest.NewTLSServer(redirectTo(other.URL, http.StatusMovedPermanently))
		},
			func(s *httptest.Server) *http.Client { return s.Client() }},
		{"to another host name", func() *httptest.Server {
			return httptest.NewServer(redirectTo(strings.Replace(other.URL, "127.0.0.1", "localhost", 1), http.StatusFound))
		}, nil},
	}
	for _, tt := range tests {
		srv := tt.server()
		t.Cleanup(srv.Close)
		mu.Lock()
		hits = 0
		mu.Unlock()
		c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) {
			if tt.client != nil {
				o.HTTPClient = tt.client(srv)
			}
		})
		_, err := c.Collection("users", Query{}).Next(context.Background())
		var re *RedirectError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "refusing a redirect from") || strings.Contains(err.Error(), "access_token") {
			t.Errorf("%s: error %v, want a *RedirectError without the query", tt.name, err)
		}
		if got := other.seen(); len(got) != 0 {
			t.Errorf("%s: the other origin received %q", tt.name, got)
		}
		mu.Lock()
		if hits != 1 {
			t.Errorf("%s: %d requests, want 1 (a refused redirect is not retried)", tt.name, hits)
		}
		mu.Unlock()
	}

	// Within the origin: followed, with the token.
	var auth string
	same := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/users" {
			http.Redirect(w, r, "/api/v2/people", http.StatusFound)
			return
		}
		auth = r.Header.Get("Authorization")
		writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
	})
	c := newClient(t, same.URL, newFakeClock(t), nil)
	if _, err := c.Collection("users", Query{}).Next(context.Background()); err != nil || auth != bearerStatic {
		t.Errorf("same-origin redirect: %v, Authorization %q", err, auth)
	}
}

// TestOAuthRedirectsKeepSecrets: a 307 from the token endpoint to another
// origin re-posts nothing there: no client secret, no refresh token.
func TestOAuthRedirectsKeepSecrets(t *testing.T) {
	t.Parallel()
	other := newElsewhere(t)
	tokenSrv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/oauth/token", http.StatusTemporaryRedirect)
	})
	for _, client := range []*http.Client{nil, {}} {
		auth, err := NewOAuth(OAuthConfig{TokenURL: tokenSrv.URL + "/oauth/token", ClientID: "client-1", ClientSecret: secretClient,
			RefreshToken: secretRefresh, HTTPClient: client, Clock: newFakeClock(t)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = auth.Token(context.Background())
		var re *RedirectError
		if !errors.As(err, &re) {
			t.Errorf("token error %v, want a *RedirectError", err)
		}
		if got := other.seen(); len(got) != 0 {
			t.Errorf("the other origin received %q", got)
		}
	}
}
