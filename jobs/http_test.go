package jobs

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	srv := httptest.NewServer(guard(sameOrigin(ui), "t0ken", "admin:pa55"))
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
		{"0.0.0.0:9090", "t", "", ""},
		{"0.0.0.0:9090", "", "u:p", ""},
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
	if _, _, err := NewHTTPHandler(HTTPConfig{Addr: "0.0.0.0:9090"}); err == nil {
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
