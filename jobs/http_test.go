package jobs

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUIGuard: the job UI's guard refuses unauthenticated requests, basic
// auth with either part wrong, cross-site unsafe requests, bodies that are
// not JSON, and reads at most maxUIBody of a body.
func TestUIGuard(t *testing.T) {
	t.Parallel()
	var read int
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		read = len(b)
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := httptest.NewServer(guard(sameOrigin(ui), "t0ken", "admin:pa55", newFailureLimiter(time.Now)))
	t.Cleanup(srv.Close)
	tests := []struct {
		name        string
		method      string
		auth        func(*http.Request)
		header      map[string]string
		body        []byte
		want        int
		wantMaxRead int
	}{
		{"no credentials", "GET", nil, nil, nil, 401, 0},
		{"wrong token", "GET", bearer("t0ken!"), nil, nil, 401, 0},
		{"token", "GET", bearer("t0ken"), nil, nil, 200, 0},
		{"basic", "GET", basic("admin", "pa55"), nil, nil, 200, 0},
		{"basic wrong password", "GET", basic("admin", "pa56"), nil, nil, 401, 0},
		{"basic wrong user", "GET", basic("admim", "pa55"), nil, nil, 401, 0},
		{"basic empty", "GET", basic("", ""), nil, nil, 401, 0},
		{"unauthenticated delete", "POST", nil, map[string]string{"Content-Type": "application/json"}, []byte(`{"job_ids":[1]}`), 401, 0},
		{"unauthenticated pause", "PUT", nil, nil, nil, 401, 0},
		{"json post", "POST", bearer("t0ken"), map[string]string{"Content-Type": "application/json"}, []byte(`{"job_ids":[1]}`), 200, 20},
		{"cross-origin text/plain post", "POST", basic("admin", "pa55"),
			map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, []byte(`{"job_ids":[1]}`), 403, 0},
		{"cross-site json post", "POST", basic("admin", "pa55"),
			map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, []byte(`{}`), 403, 0},
		{"text/plain post", "POST", bearer("t0ken"), map[string]string{"Content-Type": "text/plain"}, []byte(`{"job_ids":[1]}`), 415, 0},
		{"form post", "POST", bearer("t0ken"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, []byte(`a=1`), 415, 0},
		{"huge json post", "POST", bearer("t0ken"), map[string]string{"Content-Type": "application/json"}, bytes.Repeat([]byte(" "), 150<<20), 413, maxUIBody},
	}
	for _, tt := range tests {
		read = 0
		req, err := http.NewRequest(tt.method, srv.URL+"/riverui/api/jobs/delete", bytes.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if tt.auth != nil {
			tt.auth(req)
		}
		for k, v := range tt.header {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			if tt.want == 413 && read <= maxUIBody { // the server may close before the client sent it all
				continue
			}
			t.Fatalf("%s: %v", tt.name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want || read > tt.wantMaxRead {
			t.Errorf("%s: %d (the UI read %d bytes), want %d", tt.name, resp.StatusCode, read, tt.want)
		}
	}
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func basic(user, pass string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(user, pass) }
}

// TestCheckUIGuard: the UI is served unguarded on loopback only; basic auth
// needs both parts; the error names the setting and never the secret.
func TestCheckUIGuard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr, token, basic string
		want               string // a part of the error, or "" for none
	}{
		{"127.0.0.1:9090", "", "", ""},
		{"127.0.0.2:9090", "", "", ""},
		{"[::1]:9090", "", "", ""},
		{"localhost:9090", "", "", ""},
		{"off", "", "", ""},
		{"0.0.0.0:9090", "0123456789abcdef", "", ""},
		{"0.0.0.0:9090", "", "u:0123456789abcdef", ""},
		// a token or password that can be guessed.
		{"0.0.0.0:9090", "t", "", "USERSYNC_HTTP_TOKEN is too weak: use at least 16 characters"},
		{"127.0.0.1:9090", "0123456789abcde", "", "USERSYNC_HTTP_TOKEN is too weak"},
		{"0.0.0.0:9090", "aaaabbbbaaaabbbb", "", "USERSYNC_HTTP_TOKEN is too weak"},
		{"0.0.0.0:9090", "", "admin:s3cret", "USERSYNC_HTTP_BASIC_AUTH's password is too weak"},
		{"0.0.0.0:9090", "", "", "USERSYNC_HTTP_ADDR=0.0.0.0:9090 is not a loopback address: set USERSYNC_HTTP_TOKEN or USERSYNC_HTTP_BASIC_AUTH"},
		{":9090", "", "", "USERSYNC_HTTP_ADDR=:9090 is not a loopback address"},
		{"[::]:9090", "", "", "is not a loopback address"},
		{"192.168.1.5:9090", "", "", "is not a loopback address"},
		{"worker.internal:9090", "", "", "is not a loopback address"},
		{"127.0.0.1:9090", "", ":s3cret", "USERSYNC_HTTP_BASIC_AUTH must be user:password with neither part empty"},
		{"127.0.0.1:9090", "", "admin:", "USERSYNC_HTTP_BASIC_AUTH must be user:password"},
		{"0.0.0.0:9090", "", "s3cret", "USERSYNC_HTTP_BASIC_AUTH must be user:password"},
	}
	for _, tt := range tests {
		err := CheckUIGuard(tt.addr, tt.token, tt.basic)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %q %q: %v", tt.addr, tt.token, tt.basic, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %q %q: %v, want %q", tt.addr, tt.token, tt.basic, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("error echoes the secret: %v", err)
		}
	}
	if _, err := NewHTTPHandler(HTTPConfig{Addr: "0.0.0.0:9090"}); err == nil {
		t.Error("NewHTTPHandler serves an unguarded UI on 0.0.0.0")
	}
}

// TestHTTPServerBounds: the server bounds every phase of a connection.
func TestHTTPServerBounds(t *testing.T) {
	t.Parallel()
	s := NewHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 ||
		s.MaxHeaderBytes > 1<<20 {
		t.Errorf("server %+v", s)
	}
}

// TestUIRefusesReboundHosts: an unguarded UI (the default on loopback)
// answers only to localhost, IP addresses and USERSYNC_HTTP_HOSTS, so a
// page of a name rebound to 127.0.0.1, whose requests carry that name as
// both Host and Origin, can neither list nor cancel jobs.
func TestUIRefusesReboundHosts(t *testing.T) {
	t.Parallel()
	var served []string
	var mu sync.Mutex
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.Method+" "+r.Host)
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	})
	for _, tt := range []struct {
		name   string
		hosts  []string
		token  string
		host   string
		want   int
		served bool
	}{
		{"rebound name", nil, "", "rebind.attacker.example", http.StatusMisdirectedRequest, false},
		{"rebound name with port", nil, "", "rebind.attacker.example:9090", http.StatusMisdirectedRequest, false},
		{"localhost", nil, "", "localhost:9090", 200, true},
		{"loopback IPv4", nil, "", "127.0.0.1:9090", 200, true},
		{"loopback IPv6", nil, "", "[::1]:9090", 200, true},
		{"configured name", []string{"jobs.internal"}, "", "JOBS.internal:9090", 200, true},
		{"other name with names configured", []string{"jobs.internal"}, "", "rebind.attacker.example", http.StatusMisdirectedRequest, false},
		{"guarded, names configured", []string{"jobs.internal"}, "0123456789abcdef", "rebind.attacker.example", http.StatusMisdirectedRequest, false},
		{"guarded, no names configured", nil, "0123456789abcdef", "proxy.example", 200, true},
	} {
		served = nil
		h := hostGuard(guard(sameOrigin(ui), tt.token, "", newFailureLimiter(time.Now)), tt.hosts, tt.token != "")
		srv := httptest.NewServer(h)
		for _, req := range []*http.Request{
			httptest.NewRequest(http.MethodGet, srv.URL+"/riverui/api/jobs?state=available", nil),
			httptest.NewRequest(http.MethodPost, srv.URL+"/riverui/api/jobs/cancel", strings.NewReader(`{"job_ids":["1"]}`)),
		} {
			req.RequestURI = ""
			req.Host = tt.host
			origin := "http://" + tt.host
			req.Header.Set("Origin", origin)
			req.Header.Set("Content-Type", "application/json")
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%s: %s with Host %s: %d, want %d", tt.name, req.Method, tt.host, resp.StatusCode, tt.want)
			}
		}
		srv.Close()
		if (len(served) > 0) != tt.served {
			t.Errorf("%s: the UI served %v", tt.name, served)
		}
	}
}

// TestUIGuardSlowsFailures: after failedTries wrong tokens every request
// is refused with 429, the right token too, until the failures have
// slowed to one a second.
func TestUIGuardSlowsFailures(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	const token = "0123456789abcdef"
	srv := httptest.NewServer(guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		token, "", newFailureLimiter(clock)))
	t.Cleanup(srv.Close)
	try := func(tok string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/riverui/", nil)
		bearer(tok)(req)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 100 {
		code := try("guess-" + string(rune('a'+i%26)))
		if want := map[bool]int{true: 401, false: 429}[i < failedTries]; code != want {
			t.Fatalf("wrong try %d: %d, want %d", i+1, code, want)
		}
	}
	if code := try(token); code != 429 {
		t.Errorf("the right token while throttled: %d, want 429", code)
	}
	advance(time.Hour)
	for range 2 * failedTries {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/riverui/", nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("a request without credentials: %d, want 401", resp.StatusCode)
		}
	}
	for i := range failedTries {
		if code := try("guess"); code != 401 {
			t.Fatalf("wrong try %d after requests without credentials (which guess nothing): %d, want 401", i+1, code)
		}
	}
	if code := try(token); code != 429 {
		t.Errorf("the right token while throttled again: %d, want 429", code)
	}
	advance(1500 * time.Millisecond)
	if code := try(token); code != 200 {
		t.Errorf("the right token a second later: %d", code)
	}
	if code := try("guess"); code != 401 {
		t.Errorf("one wrong try a second later: %d, want 401", code)
	}
	if code := try("guess"); code != 429 {
		t.Errorf("a second wrong try at once: %d, want 429", code)
	}
}
